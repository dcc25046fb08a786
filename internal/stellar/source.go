package stellar

import (
	"context"
	"errors"

	"github.com/stellar/go-stellar-sdk/keypair"
)

// source chooses the account whose sequence number an envelope consumes, and the keys that sign
// the transaction for it. This cut has one: the vault itself. Channel accounts (issue 5) lease a
// channel here and release it in release; the payment's own source then stays the vault and the
// channel key signs alongside it.
type source interface {
	acquire(ctx context.Context, keys Keys) (sourceLease, error)
	// release is called once the envelope's fate is decided (Ledger.Done), or by Prepare when it
	// fails after acquire.
	release(ctx context.Context, account string)
}

// sourceLease is an acquired transaction source.
type sourceLease struct {
	// account is the G... transaction source (Envelope.Channel).
	account string
	// opSource is the operations' source account; "" means the transaction source.
	opSource string
	// signers sign the transaction.
	signers []*keypair.Full
}

// vaultSource uses the vault as the transaction source: one transaction at a time per ledger
// in practice, enough for the first cut.
type vaultSource struct{ account string }

func (v vaultSource) acquire(_ context.Context, keys Keys) (sourceLease, error) {
	if keys.Vault == nil {
		return sourceLease{}, errors.New("no vault key")
	}
	return sourceLease{account: v.account, signers: []*keypair.Full{keys.Vault}}, nil
}

func (vaultSource) release(context.Context, string) {}

var _ source = vaultSource{}
