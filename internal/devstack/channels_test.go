package devstack

import (
	"slices"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// transfersApplied are the applied transactions sent by the service (from the vault or a
// channel), leaving out the stack's own setup (the channel creation from the fee account).
func transfersApplied(s *Stack) []stellarsim.AppliedTx {
	var out []stellarsim.AppliedTx
	for _, a := range s.Network.Applied() {
		if s.fromService(a.Source) {
			out = append(out, a)
		}
	}
	return out
}

// transferEnvelopes are the envelopes the service sent.
func transferEnvelopes(s *Stack) []stellarsim.ReceivedEnvelope {
	var out []stellarsim.ReceivedEnvelope
	for _, e := range s.Network.Envelopes() {
		if s.fromService(e.Source) {
			out = append(out, e)
		}
	}
	return out
}

func (s *Stack) fromService(source string) bool {
	return source == s.Info.Vault.Account || slices.Contains(s.Info.Channels, source)
}

// TestStackUsesChannels: the stack creates its channel accounts at start (sponsored, 0 XLM) and
// sends transfers from them in fee bumps paid by the fee account.
func TestStackUsesChannels(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	if len(s.Info.Channels) != defaultChannels {
		t.Fatalf("%d channels, want %d", len(s.Info.Channels), defaultChannels)
	}
	for _, ch := range s.Info.Channels {
		if _, err := s.Network.Balance(ch, stellarsim.Native); err != nil {
			t.Fatalf("channel %s not on chain: %v", ch, err)
		}
	}
	wallet := s.Info.Wallets[0].Account
	r := post(t, s, "channels-0001", `{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1","asset":"USDC"}`)
	if r.status != 200 {
		t.Fatalf("status %d %v", r.status, r.body)
	}
	applied := transfersApplied(s)
	if len(applied) != 1 || !slices.Contains(s.Info.Channels, applied[0].Source) || applied[0].FeeBumpHash == "" ||
		applied[0].Hash != r.body["transactionHash"] {
		t.Fatalf("applied %+v, answer %v", applied, r.body)
	}
	// The banner's and /_sim/stack's fee account is the one that paid the fee bump.
	if applied[0].FeeSource != s.Info.FeeAccount.Account {
		t.Fatalf("fee bump paid by %s, Info.FeeAccount %s", applied[0].FeeSource, s.Info.FeeAccount.Account)
	}
}
