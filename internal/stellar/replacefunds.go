package stellar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// checkReplacementFunds refuses a replacement by fee before it is signed or sent when the fee
// account cannot fund it the way stellar-core judges a replacement (src/herder/TransactionQueue.cpp,
// TransactionQueue::canAdd: for a fee bump replacing the queued transaction of its sequence number,
// the new full fee minus the replaced one's full fee, when both have the same fee source, must fit
// the fee source's available balance (getAvailableBalance, src/transactions/TransactionUtils.cpp)
// on top of the full fees already queued for it, which include the replaced one's; else ERROR
// txINSUFFICIENT_BALANCE). So the replacement needs
//
//	available(fee account) >= newFee + sum over other channels d holding an envelope of fee(d)
//
// env's channel's current envelope being the one replaced. The other channels' queued fees are
// feeGuard's (queuedElsewhere: this process's book, the cap for another process's). The fee
// account's balance is read once (its ACCOUNT entry: one getLedgerEntries, or one GET
// /accounts/{id}): replacements are rare, and the balance Prepare read may be ledgers old. No
// latest ledger is read: every quarantined channel counts as holding an envelope, which can only
// make the check stricter.
//
// feeAccount is the fee bump's fee source, newFee the replacement's full fee in stroops.
//
// Errors: *transfer.UnavailableError FEE_ACCOUNT_UNDERFUNDED when it cannot fund the replacement
// (not replacing: env stays queued and can still land), also for a fee account that does not
// exist; a plain error when the fee account or the leases cannot be read.
func (c *common) checkReplacementFunds(ctx context.Context, ch chain, env transfer.Envelope, feeAccount string, newFee int64) error {
	// The fee account alone, as the query's source: one ledger entry, one GET on Horizon.
	snap, err := ch.accounts(ctx, accountQuery{source: feeAccount, fee: feeAccount})
	if errors.Is(err, ErrAccountMissing) || err == nil && snap.fee == nil {
		return replaceShort(fmt.Sprintf("the fee account %s does not exist on the network", feeAccount))
	}
	if err != nil {
		return fmt.Errorf("stellar: replacing %s: reading the fee account: %w", env.InnerHash, err)
	}
	avail := snap.fee.available(c.reserve.baseReserve(ctx, c.clock.Now(), ch.baseReserve))
	if avail < newFee {
		return replaceShort(fmt.Sprintf("the fee account has %d stroops above its reserve, below the replacement's fee of %d stroops", max(avail, 0), newFee))
	}
	channels, err := c.channelAddresses(ctx)
	if err != nil {
		return err
	}
	perChannel := c.capFor(c.batchPayments)
	if perChannel <= 0 {
		perChannel = newFee // as in checkFunds: no cap, this envelope's fee is the best estimate
	}
	if avail >= addCapped(newFee, mulCapped(perChannel, int64(max(len(channels)-1, 0)))) {
		return nil
	}
	queued, err := c.queuedElsewhere(ctx, channels, env.Channel, c.clock.Now(), time.Time{}, perChannel)
	if err != nil {
		return fmt.Errorf("stellar: replacing %s: reading the channel leases: %w", env.InnerHash, err)
	}
	if avail < addCapped(newFee, queued) {
		return replaceShort(fmt.Sprintf("the fee account has %d stroops above its reserve; the replacement's fee of %d stroops on top of the up to %d stroops of fees it may have queued on other channels would exceed it",
			avail, newFee, queued))
	}
	return nil
}

// channelAddresses are the pool's channel accounts (none without a pool).
func (c *common) channelAddresses(ctx context.Context) ([]string, error) {
	if c.pool == nil {
		return nil, nil
	}
	keys, err := c.loadKeys(ctx)
	if err != nil {
		return nil, err
	}
	chans, err := c.pool.Channels(keys)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(chans))
	for _, k := range chans {
		out = append(out, k.Address())
	}
	return out, nil
}

// replaceShort is the refusal of a replacement the fee account cannot fund. Nothing new is sent;
// the envelope already queued is not touched and can still land, so it is never a client's
// answer (the orchestrator pages and goes on waiting).
func replaceShort(why string) *transfer.UnavailableError {
	return &transfer.UnavailableError{Code: transfer.CodeFeeAccountUnderfunded, RetryAfter: time.Minute,
		Detail: why + "; not replacing by fee: the queued envelope goes on waiting and can still land; fund the fee account"}
}
