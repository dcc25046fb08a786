package stellar_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// The network tests' shared rig: the local network on a virtual clock that starts at
// simNetStart, a ledger closed every simNetClose of it, and the service's keys with a USDC
// issuer and funded accounts. The rigs in this package (contractRig, fundsRig, payRig and the
// single-test rigs) build their ledger and store on top of it.

// simNetStart is the instant every rig's virtual clock starts at.
var simNetStart = time.Unix(2_000_000_000, 0)

// simNetClose is the virtual time between two ledger closes (pubnet's target close time).
const simNetClose = 5 * time.Second

// simNetOpts configures startSimNet.
type simNetOpts struct {
	// net are the network's options; startSimNet sets Clock.
	net stellarsim.Options
	// firstCloseAfterInterval makes the first close wait simNetClose past the clock's start;
	// otherwise the first move of the clock closes a ledger at once (the schedule counts from
	// the zero time).
	firstCloseAfterInterval bool
}

// startSimNet starts the local network on a new virtual clock at simNetStart and closes a ledger
// whenever the clock has moved simNetClose past the last close (several intervals in one move
// close one ledger). The network is closed when the test ends.
//
// It keeps its own schedule rather than stellarsim.Network.CloseOnAdvance: that one counts its
// first close from the network's clock, whereas most rigs here count it from the zero time, so
// that their first advance closes a ledger at once; and the close runs with the schedule's lock
// held, so that moves reported at once never close two ledgers for one interval.
func startSimNet(t *testing.T, o simNetOpts) (*vclock.Clock, *stellarsim.Network) {
	t.Helper()
	clock := vclock.New(simNetStart)
	o.net.Clock = clock
	n, err := stellarsim.Start(o.net)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	var mu sync.Mutex
	var last time.Time
	if o.firstCloseAfterInterval {
		last = clock.Now()
	}
	clock.OnAdvance(func(now time.Time) {
		mu.Lock()
		defer mu.Unlock()
		if now.Sub(last) >= simNetClose {
			last = now
			n.CloseLedger()
		}
	})
	return clock, n
}

// fundOpts chooses the accounts fundedKeys creates. The vault is always created with 100 XLM;
// the fee account with 100 XLM and the wallet with 10 XLM.
type fundOpts struct {
	// vaultTrustline gives the vault a USDC trustline; vaultUSDC (stroops, 0: none) is then
	// minted to it.
	vaultTrustline bool
	vaultUSDC      int64
	// fee creates the fee account.
	fee bool
	// wallet creates a random wallet; walletTrustline gives it a USDC trustline.
	wallet          bool
	walletTrustline bool
	// noChannelMaster leaves the keys without a channel master seed (no channel accounts).
	noChannelMaster bool
}

// simAccounts are the service's keys and the accounts fundedKeys created on the network.
type simAccounts struct {
	keys   signing.Keys
	issuer *keypair.Full
	usdc   stellarsim.Asset
	vault  string
	fee    string
	// wallet is empty unless fundOpts.wallet.
	wallet string
}

// fundedKeys generates the service's keys (with a fixed channel master seed unless
// o.noChannelMaster), issues USDC from a random issuer and creates the accounts o asks for.
func fundedKeys(t *testing.T, n *stellarsim.Network, o fundOpts) simAccounts {
	t.Helper()
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	if !o.noChannelMaster {
		keys.ChannelMaster = signing.NewMasterSeed([]byte("0123456789abcdef0123456789abcdef"))
	}
	a := simAccounts{keys: keys, issuer: keypair.MustRandom(), vault: keys.Vault.Address(), fee: keys.Fee.Address()}
	a.usdc = n.IssueAsset("USDC", a.issuer)
	steps := []func() error{func() error { return n.CreateAccount(a.vault, 100*unit) }}
	if o.vaultTrustline {
		steps = append(steps, func() error { return n.AddTrustline(a.vault, a.usdc, 0) })
		if o.vaultUSDC > 0 {
			steps = append(steps, func() error { return n.Mint(a.vault, a.usdc, o.vaultUSDC) })
		}
	}
	if o.fee {
		steps = append(steps, func() error { return n.CreateAccount(a.fee, 100*unit) })
	}
	if o.wallet {
		a.wallet = keypair.MustRandom().Address()
		steps = append(steps, func() error { return n.CreateAccount(a.wallet, 10*unit) })
		if o.walletTrustline {
			steps = append(steps, func() error { return n.AddTrustline(a.wallet, a.usdc, 0) })
		}
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	return a
}
