package stellar

import (
	"context"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Another process holds the vault's slot in the network's queue: this process's first send of its
// own vault-sourced envelope is answered TRY_AGAIN_LATER, and the answer says the source is busy
// (SourceBusy: the time to the next close, whole seconds). A channel's TRY_AGAIN_LATER does not.
func TestSuiteTryAgainLaterFromABusyVault(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			e := newSuiteEnv(t, backend, suiteOpts{})
			other := e.otherProcess(t)
			ctx := context.Background()
			mine := e.prepare(t, e.wallet, unit)
			theirs, err := other.Prepare(ctx, withdraw(e.wallet, 2*unit), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Send(ctx, theirs); err != nil {
				t.Fatal(err)
			}
			res := e.send(t, mine, transfer.SendTryAgainLater)
			if res.SourceBusy <= 0 || res.SourceBusy > transfer.DefaultLedgerInterval || res.SourceBusy%time.Second != 0 {
				t.Errorf("SourceBusy %v, want the time to the next close in whole seconds", res.SourceBusy)
			}
			if !transfer.RefusedBeforeInclusion(res, false) {
				t.Error("a busy vault's first send should prove nothing landed")
			}
		})
	}
	t.Run("channel", func(t *testing.T) {
		e := newSuiteEnv(t, "rpc", suiteOpts{channels: 1})
		env := e.prepare(t, e.wallet, unit)
		e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater})
		if res := e.send(t, env, transfer.SendTryAgainLater); res.SourceBusy != 0 {
			t.Errorf("a channel's TRY_AGAIN_LATER: SourceBusy %v, want 0", res.SourceBusy)
		}
	})
}

// otherProcess is a second ledger on e's network with e's keys and vault, as another Lambda
// instance would have: it shares nothing in memory with e.ledger.
func (e *suiteEnv) otherProcess(t *testing.T) backendLedger {
	t.Helper()
	assets := []txnbuild.CreditAsset{{Code: e.usdc.Code, Issuer: e.usdc.Issuer}}
	var (
		l   backendLedger
		err error
	)
	switch e.backend {
	case "rpc":
		l, err = NewRPCLedger(RPCConfig{URL: e.net.RPCURL(), Passphrase: e.net.Passphrase(), VaultAccount: e.vault, Assets: assets,
			MaxFeeStroops: 10_000, Keys: signing.StaticKeys{K: e.keys}, Clock: e.clock})
	default:
		l, err = NewHorizonLedger(HorizonConfig{URL: e.net.URL(), Passphrase: e.net.Passphrase(), VaultAccount: e.vault, Assets: assets,
			MaxFeeStroops: 10_000, Keys: signing.StaticKeys{K: e.keys}, Clock: e.clock})
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}
