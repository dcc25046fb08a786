package stellar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// LeaseReader is a LeaseStore that can also read a channel's lease: internal/dynamo's
// ChannelLeases implements it. The fee account check before sending reads the channels' leases
// through it to learn which ones may hold a queued envelope (feeGuard). Without it every other
// channel counts as holding one.
type LeaseReader interface {
	// ChannelHolder reads channel's lease consistently: its owner, when the lease ends without a
	// release and its quarantine (the maxTime of the envelope built on it, whole seconds).
	// transfer.ErrNotFound when the channel is free (no lease item).
	ChannelHolder(ctx context.Context, channel string) (owner string, leaseExpiresAt, quarantinedUntil time.Time, err error)
}

// feeGuard decides whether the fee account can pay one more envelope: the service must never
// queue more fees than the fee account holds (README.md, "The fee account").
//
// stellar-core admits a transaction only if its fee source's available balance covers its full
// fee plus the full fees of the transactions already queued for that fee source
// (src/herder/TransactionQueue.cpp, TransactionQueue::canAdd; getAvailableBalance in
// src/transactions/TransactionUtils.cpp): balance - reserve - selling liabilities. The service
// holds the same rule before it sends, across every Lambda environment, from two facts:
//
//   - Every envelope the fee account pays for is a channel's fee bump, and a channel carries at
//     most one envelope that can still land: its lease is held from before the envelope is built
//     until its fate is decided, and an undecided envelope keeps the channel quarantined until a
//     ledger closes after its maxTime (ChannelPool, LeaseStore). So the envelopes queued from the
//     fee account are at most one per channel whose lease item is held or quarantined.
//   - No envelope the service builds can charge more than MAX_FEE_STROOPS per payment it holds
//     (bidRate; a replacement by fee is capped by it too), so at most BATCH_SIZE x
//     MAX_FEE_STROOPS (common.batchPayments, capFor). This process knows the exact maximum fee of
//     the envelopes it built (book); another process's envelope counts at that cap. A process
//     configured with BATCH_SIZE 1 beside batching submitters counts them at one payment's cap,
//     which is why the network's own check stays the backstop.
//
// So an envelope on channel c may be sent when
//
//	available(fee account) >= fee(envelope) + sum over channels d != c holding an envelope of fee(d)
//
// When the fee account can pay this envelope and every other channel's at the cap (the usual
// case: 16 channels at the default cap of 100,000 stroops are 0.16 XLM), that holds without
// reading any lease: no round trip. Only a fee account within that margin of its reserve has
// the other channels' leases read (consistent GetItems, in parallel: one round trip of latency).
// Two processes sending at once cannot both miss each other: each wrote its own lease before it
// reads the others', and a consistent read sees every write completed before it began, so of
// two concurrent checks at least one counts the other's channel (at the cap, which covers its
// fee). The balance read (the fee account's entry in the same getLedgerEntries as the channel's
// sequence number) can trail an inclusion by a ledger, in which case an included envelope whose
// channel is still leased is counted twice: the check errs on the side of refusing. The network's
// own check (a first send refused txINSUFFICIENT_BALANCE, transfer.refused) stays the backstop.
// A replacement by fee is checked by the same rule before it is signed (checkReplacementFunds),
// with env's channel's queued envelope as the one it replaces.
type feeGuard struct {
	mu   sync.Mutex
	book map[string]bookedFee // by channel: the envelope this process built on it
}

// bookedFee is an envelope this process built on a channel: the lease it was built under, its
// inner hash and the most it can charge, in stroops.
type bookedFee struct {
	owner, inner string
	fee          int64
}

// note records env, built on lease, as this process's envelope on its channel.
func (g *feeGuard) note(lease sources.Lease, env transfer.Envelope) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.book == nil {
		g.book = map[string]bookedFee{}
	}
	g.book[env.Channel] = bookedFee{owner: lease.Owner, inner: env.InnerHash, fee: env.FeeStroops}
}

// noteFee raises the recorded maximum fee of this process's envelope with inner hash inner on
// channel to fee (stroops): a new fee bump around the same inner envelope replaces it in the
// network's queue. Nothing when channel holds another envelope of this process, or none.
func (g *feeGuard) noteFee(channel, inner string, fee int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b, ok := g.book[channel]; ok && b.inner == inner && fee > b.fee {
		b.fee = fee
		g.book[channel] = b
	}
}

// replacedAbove reports whether this process wrapped the inner envelope inner on channel in a fee
// bump of more than fee stroops (a replacement by fee, noteFee): an envelope of fee is then an
// older wrap of it.
func (g *feeGuard) replacedAbove(channel, inner string, fee int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.book[channel]
	return ok && b.inner == inner && b.fee > fee
}

// forget drops env's entry once its fate is decided (Done).
func (g *feeGuard) forget(env transfer.Envelope) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if b, ok := g.book[env.Channel]; ok && b.inner == env.InnerHash {
		delete(g.book, env.Channel)
	}
}

// booked is channel's entry if it was built under the lease owner holds.
func (g *feeGuard) booked(channel, owner string) (int64, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, ok := g.book[channel]
	if !ok || owner == "" || b.owner != owner {
		return 0, false
	}
	return b.fee, true
}

// queuedElsewhere is the most the envelopes on the pool's channels other than mine can charge
// the fee account, in stroops: each channel whose lease is held at now or quarantined past
// ledgerClose (its envelope could still land) counts its envelope's maximum fee when this process
// built it (book) and perChannel otherwise. Without a LeaseReader every other channel counts
// perChannel. channels are the pool's channel accounts.
func (c *common) queuedElsewhere(ctx context.Context, channels []string, mine string, now, ledgerClose time.Time, perChannel int64) (int64, error) {
	reader, ok := c.pool.Leases().(LeaseReader)
	var total int64
	if !ok {
		for _, ch := range channels {
			if ch != mine {
				total = addCapped(total, perChannel)
			}
		}
		return total, nil
	}
	fees := make([]int64, len(channels))
	errs := make([]error, len(channels))
	var wg sync.WaitGroup
	for i, ch := range channels {
		if ch == mine {
			continue
		}
		wg.Go(func() {
			owner, until, quarantine, err := reader.ChannelHolder(ctx, ch)
			switch {
			case errors.Is(err, transfer.ErrNotFound):
				return // free: no envelope can be queued on it
			case err != nil:
				errs[i] = err
				return
			}
			held := now.Before(until)
			undecided := !quarantine.IsZero() && (ledgerClose.IsZero() || !quarantine.Before(ledgerClose))
			if !held && !undecided {
				return
			}
			if fee, ok := c.guard.booked(ch, owner); ok {
				fees[i] = fee
				return
			}
			fees[i] = perChannel
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	for _, f := range fees {
		total = addCapped(total, f)
	}
	return total, nil
}

// addCapped is a + b for non-negative a and b, math.MaxInt64 when that overflows.
func addCapped(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

// mulCapped is a x n for non-negative a and n, math.MaxInt64 when that overflows.
func mulCapped(a, n int64) int64 {
	if n != 0 && a > math.MaxInt64/n {
		return math.MaxInt64
	}
	return a * n
}

// checkFunds refuses env before it is sent when the paying side cannot pay (see funds.go):
//
//   - vault (an authorized trustline for asset holding stroops above its selling liabilities;
//     nothing to check when the vault issues the asset): else VAULT_UNDERFUNDED. This is what
//     the payment's apply judges: PAYMENT_SRC_NO_TRUST, PAYMENT_SRC_NOT_AUTHORIZED,
//     PAYMENT_UNDERFUNDED (src/transactions/PaymentOpFrame.cpp, doApply, through
//     PathPaymentOpFrameBase::updateSourceBalance: no trustline, not isAuthorized, or a balance
//     that would fall below the selling liabilities).
//     checkAsset false skips it (a contract call, whose simulation judged the vault).
//   - the fee payer: without a fee bump the vault pays its own fee, and its available XLM must
//     cover env's maximum fee (else VAULT_UNDERFUNDED, the tx_insufficient_balance a FAILED
//     inclusion would show); with one, the fee account must cover it on top of what it may have
//     queued (feeGuard), else FEE_ACCOUNT_UNDERFUNDED.
//
// Every refusal is a *transfer.UnavailableError with a minute's Retry-After (an operator has to
// act) and a detail that names the account and the figures, never a key.
func (c *common) checkFunds(ctx context.Context, ch chain, lease sources.Lease, snap accountSnapshot, env transfer.Envelope,
	stroops int64, asset vaultAsset, checkAsset bool) error {
	if checkAsset && asset.credit.Issuer != c.vaultAccount {
		t := snap.trust
		switch {
		case !t.found:
			return vaultShort(fmt.Sprintf("the vault %s holds no trustline for %s", c.vaultAccount, asset.credit.Code))
		case !t.authorized:
			return vaultShort(fmt.Sprintf("the vault's trustline for %s is not authorized by its issuer", asset.credit.Code))
		case t.balance-t.sellingLiabilities < stroops:
			return vaultShort(fmt.Sprintf("the vault holds %s %s available, below the %s to pay",
				amountText(t.balance-t.sellingLiabilities), asset.credit.Code, amountText(stroops)))
		}
	}
	reserve := c.reserve.baseReserve(ctx, c.clock.Now(), ch.baseReserve)
	if lease.FeeSource == nil {
		if avail := snap.source.available(reserve); avail < env.FeeStroops {
			return vaultShort(fmt.Sprintf("the vault, which pays its own fee, has %d stroops above its reserve, below the fee of %d stroops", max(avail, 0), env.FeeStroops))
		}
		return nil
	}
	if snap.fee == nil {
		return feeShort(fmt.Sprintf("the fee account %s does not exist on the network", lease.FeeSource.Address()))
	}
	avail := snap.fee.available(reserve)
	if avail < env.FeeStroops {
		return feeShort(fmt.Sprintf("the fee account has %d stroops above its reserve, below this transaction's fee of %d stroops", max(avail, 0), env.FeeStroops))
	}
	channels, err := c.channelAddresses(ctx)
	if err != nil {
		return err
	}
	perChannel := c.capFor(c.batchPayments)
	if perChannel <= 0 {
		// No cap: nothing bounds another envelope's fee but its own bid; this one's is the best
		// estimate, and the network's check the backstop.
		perChannel = env.FeeStroops
	}
	worst := addCapped(env.FeeStroops, mulCapped(perChannel, int64(max(len(channels)-1, 0))))
	if avail >= worst {
		return nil
	}
	queued, err := c.queuedElsewhere(ctx, channels, env.Channel, c.clock.Now(), lease.LedgerClose, perChannel)
	if err != nil {
		return &transfer.UnavailableError{Code: transfer.CodeStoreUnavailable,
			Detail: "the channel leases could not be read to check the fee account's queued fees; nothing was submitted", Err: err}
	}
	if avail < addCapped(env.FeeStroops, queued) {
		return feeShort(fmt.Sprintf("the fee account has %d stroops above its reserve; this transaction's fee of %d stroops on top of the up to %d stroops of fees it may have queued would exceed it",
			avail, env.FeeStroops, queued))
	}
	return nil
}

func vaultShort(why string) *transfer.UnavailableError {
	return &transfer.UnavailableError{Code: transfer.CodeVaultUnderfunded, RetryAfter: time.Minute,
		Detail: why + "; nothing was submitted: retry with the same key once the vault is funded and holds an authorized trustline for the asset"}
}

func feeShort(why string) *transfer.UnavailableError {
	return &transfer.UnavailableError{Code: transfer.CodeFeeAccountUnderfunded, RetryAfter: time.Minute,
		Detail: why + "; nothing was submitted: retry with the same key once the fee account is funded"}
}

// amountText is stroops as a decimal amount of units (7 decimals, trailing zeros kept).
func amountText(stroops int64) string {
	sign := ""
	if stroops < 0 {
		sign, stroops = "-", -stroops
	}
	return fmt.Sprintf("%s%d.%07d", sign, stroops/10_000_000, stroops%10_000_000)
}

// fundsQuery is what checkFunds needs read for an envelope on lease: its source's sequence
// number, its fee bump's fee account, and, when withAsset, the vault's trustline for asset
// (none when the vault issues it).
func (c *common) fundsQuery(lease sources.Lease, asset txnbuild.CreditAsset, withAsset bool) accountQuery {
	q := accountQuery{source: lease.Account}
	if lease.FeeSource != nil {
		q.fee = lease.FeeSource.Address()
	}
	if withAsset && asset.Issuer != c.vaultAccount {
		q.vault, q.asset = c.vaultAccount, asset
	}
	return q
}
