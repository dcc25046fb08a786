package stellar

import (
	"context"
	"errors"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// source chooses the account whose sequence number an envelope consumes, and the keys that sign
// the transaction for it: the vault itself (vaultSource), or a leased channel account whose
// transaction a fee account wraps in a fee bump (ChannelPool).
type source interface {
	// acquire returns a transaction source for an envelope valid until terms.maxTime.
	acquire(ctx context.Context, keys Keys, terms leaseTerms) (sourceLease, error)
	// bind records which envelope a lease signed, so that release can find the lease again.
	bind(lease sourceLease, env transfer.Envelope)
	// release is called once the envelope's fate is decided (Ledger.Done); unbound, by Prepare
	// when it fails after acquire.
	release(ctx context.Context, lease sourceLease, env transfer.Envelope)
	// needsLedgerFirst reports whether acquire needs terms.ledgerClose (the latest ledger's close
	// time), so Prepare reads the latest ledger before acquiring.
	needsLedgerFirst() bool
}

// leaseTerms are what a channel lease depends on.
type leaseTerms struct {
	// until is when the lease ends without a release: the invocation's deadline.
	until time.Time
	// maxTime is the envelope's timebounds maxTime: a channel whose envelope is in doubt stays
	// quarantined until a ledger closes after it.
	maxTime time.Time
	// ledgerClose is the close time of the latest ledger (zero when not read).
	ledgerClose time.Time
}

// sourceLease is an acquired transaction source.
type sourceLease struct {
	// account is the G... transaction source (Envelope.Channel).
	account string
	// opSource is the operations' source account; "" means the transaction source.
	opSource string
	// signers sign the (inner) transaction.
	signers []*keypair.Full
	// feeSource, when set, pays a fee-bump transaction wrapping the signed transaction.
	feeSource *keypair.Full
	// owner identifies the lease in the lease store; "" for the vault.
	owner string
}

// vaultSource uses the vault as the transaction source: one transaction per ledger in practice
// (the network queues one transaction per source account). It is the mode without channels.
type vaultSource struct{ account string }

func (v vaultSource) acquire(_ context.Context, keys Keys, _ leaseTerms) (sourceLease, error) {
	if keys.Vault == nil {
		return sourceLease{}, errors.New("no vault key")
	}
	return sourceLease{account: v.account, signers: []*keypair.Full{keys.Vault}}, nil
}

func (vaultSource) bind(sourceLease, transfer.Envelope) {}

func (vaultSource) release(context.Context, sourceLease, transfer.Envelope) {}

func (vaultSource) needsLedgerFirst() bool { return false }

var _ source = vaultSource{}
