package sources

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Source chooses the account whose sequence number an envelope consumes, and the keys that sign
// the transaction for it: the vault itself (VaultSource), or a leased channel account whose
// transaction a fee account wraps in a fee bump (ChannelPool).
type Source interface {
	// Acquire returns a transaction source for an envelope valid until terms.MaxTime.
	Acquire(ctx context.Context, keys signing.Keys, terms LeaseTerms) (Lease, error)
	// Bind records which envelope a lease signed, so that Release can find the lease again.
	Bind(lease Lease, env transfer.Envelope)
	// Release is called once the envelope's fate is decided (the ledger's Done); unbound, by its
	// Prepare when it fails after Acquire.
	Release(ctx context.Context, lease Lease, env transfer.Envelope)
}

// LeaseTerms are what a channel lease depends on.
type LeaseTerms struct {
	// Until is when the lease ends without a release: the invocation's deadline.
	Until time.Time
	// MaxTime is the envelope's timebounds maxTime: a channel whose envelope is in doubt stays
	// quarantined until a ledger closes after it.
	MaxTime time.Time
	// LedgerClose is the close time of the latest ledger, read before the source is acquired
	// (zero when unknown).
	LedgerClose time.Time
	// Vault is the vault account (VAULT_ACCOUNT), the operations' source of a channel's envelope.
	Vault string
}

// Lease is an acquired transaction source.
type Lease struct {
	// Account is the G... transaction source (Envelope.Channel).
	Account string
	// OpSource is the operations' source account; "" means the transaction source.
	OpSource string
	// Signers sign the (inner) transaction.
	Signers []signing.Signer
	// FeeSource, when set, pays a fee-bump transaction wrapping the signed transaction.
	FeeSource signing.Signer
	// Owner identifies the lease: in the lease store for a channel, in this process for the vault.
	Owner string
	// LedgerClose is the latest ledger's close time read before the lease was acquired: an older
	// envelope's quarantine ended if it is before it (the ledger's feeGuard).
	LedgerClose time.Time
}

// VaultSource uses the vault as the transaction source: the mode without channels. stellar-core
// queues one transaction per source account (TransactionQueue::canAdd: another gets
// TRY_AGAIN_LATER), so the vault carries one transaction per ledger. Within this process its
// transfers therefore take the vault's slot one at a time, oldest waiter first: Acquire waits at
// most Wait (by default one ledger interval) for it, then answers CHANNELS_BUSY with the
// Retry-After of BusyRetryAfter (one source). Another process holding the network's slot shows up
// as a first send answered TRY_AGAIN_LATER (Send's SendResult.SourceBusy). The slot is held until
// the envelope's fate is decided (Done) or the invocation's deadline (terms.Until), whichever
// comes first. Safe for concurrent use.
type VaultSource struct {
	account  string
	clock    transfer.Clock
	interval func() time.Duration
	wait     time.Duration // 0: one ledger interval

	mu     sync.Mutex
	holder vaultHold // zero: the slot is free
	queue  tickets   // waiting callers, oldest first
}

// vaultHold is the caller holding the process's vault slot: its lease owner ID, the inner hash
// of the envelope it built (once bound) and when the hold ends without a release.
type vaultHold struct {
	owner, inner string
	expires      time.Time
}

func NewVaultSource(account string, clock transfer.Clock, interval func() time.Duration) *VaultSource {
	return &VaultSource{account: account, clock: clock, interval: interval}
}

func (v *VaultSource) Acquire(ctx context.Context, keys signing.Keys, terms LeaseTerms) (Lease, error) {
	vaultKey := keys.VaultKey()
	if vaultKey == nil {
		return Lease{}, errors.New("no vault key")
	}
	interval := LedgerInterval(v.interval)
	wait := v.wait
	if wait <= 0 {
		wait = interval
	}
	waitUntil := v.clock.Now().Add(wait)
	if last := terms.MaxTime.Add(-minValidity); last.Before(waitUntil) {
		waitUntil = last
	}
	v.mu.Lock()
	ticket := v.queue.add()
	v.mu.Unlock()
	defer func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		v.queue.remove(ticket)
	}()
	for {
		now := v.clock.Now()
		if owner, ok := v.take(ticket, now, terms.Until); ok {
			return Lease{Account: v.account, Signers: []signing.Signer{vaultKey}, Owner: owner}, nil
		}
		// Looking costs nothing (it asks no one), so the slot is looked at every firstRound.
		if !now.Add(firstRound).Before(waitUntil) {
			v.mu.Lock()
			ahead := v.queue.ahead(ticket)
			v.mu.Unlock()
			return Lease{}, &transfer.UnavailableError{Code: CodeChannelsBusy,
				RetryAfter: BusyRetryAfter(ahead, 1, interval, UntilNextClose(terms.LedgerClose, now, interval)),
				Detail:     "the vault account is busy with another transfer; nothing was submitted"}
		}
		if err := v.clock.Sleep(ctx, firstRound); err != nil {
			return Lease{}, err
		}
	}
}

// take gives the slot to ticket if it is the oldest waiter and the slot is free (or its hold
// ended) at now, until until; it returns the hold's owner ID.
func (v *VaultSource) take(ticket uint64, now, until time.Time) (string, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.queue.index(ticket) != 0 || v.holder.owner != "" && now.Before(v.holder.expires) {
		return "", false
	}
	v.holder = vaultHold{owner: newLeaseOwner(), expires: until}
	return v.holder.owner, true
}

func (v *VaultSource) Bind(lease Lease, env transfer.Envelope) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.holder.owner != "" && v.holder.owner == lease.Owner {
		v.holder.inner = env.InnerHash
	}
}

// Release frees the slot if lease holds it (Prepare failed) or env is the envelope it was bound
// to (Done); the envelope of a take-over, built elsewhere, frees nothing.
func (v *VaultSource) Release(_ context.Context, lease Lease, env transfer.Envelope) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h := v.holder
	if h.owner != "" && (lease.Owner != "" && h.owner == lease.Owner || lease.Owner == "" && env.InnerHash != "" && h.inner == env.InnerHash) {
		v.holder = vaultHold{}
	}
}

var _ Source = (*VaultSource)(nil)

// ledgerInterval is f's answer, or DefaultLedgerInterval when f is nil or answers <= 0.
func LedgerInterval(f func() time.Duration) time.Duration {
	if f != nil {
		if d := f(); d > 0 {
			return d
		}
	}
	return DefaultLedgerInterval
}

// UntilNextClose is the time from now to the next ledger close, ledgers closing every interval
// from lastClose (a ledger's close time as the network reported it); interval when lastClose is
// unknown (zero) or ahead of now. The result is in (0, interval].
func UntilNextClose(lastClose, now time.Time, interval time.Duration) time.Duration {
	if lastClose.IsZero() || lastClose.After(now) {
		return interval
	}
	return interval - now.Sub(lastClose)%interval
}

// BusyRetryAfter is the Retry-After of CHANNELS_BUSY: with ahead transfers before this one and
// sources transaction sources carrying one transaction per ledger each (stellar-core queues one
// per source account), the transfers ahead take ahead/sources ledgers from the next close on:
//
//	ahead / sources * interval + untilNext
//
// rounded up to a whole second (the unit of the Retry-After header, RFC 9110 section 10.2.3).
func BusyRetryAfter(ahead, sources int, interval, untilNext time.Duration) time.Duration {
	d := untilNext + time.Duration(int64(interval)*int64(ahead)/int64(max(sources, 1)))
	return (d + time.Second - 1).Truncate(time.Second)
}
