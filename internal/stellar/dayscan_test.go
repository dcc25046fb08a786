package stellar_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// dayRig is a network on a virtual clock whose ledgers close when the test says, at the instants
// it says, with the vault, a fee account, a channel account and a wallet whose keys it holds.
type dayRig struct {
	t                     testing.TB
	clock                 *vclock.Clock
	n                     *stellarsim.Network
	keys                  signing.Keys
	channel, wallet       *keypair.Full
	usdc                  stellarsim.Asset
	credit                txnbuild.CreditAsset
	ledger                *stellar.RPCLedger
	vaultStart, walletUSD int64
}

func newDayRig(t testing.TB, start time.Time) *dayRig {
	t.Helper()
	clock := vclock.New(start)
	n, err := stellarsim.Start(stellarsim.Options{Clock: clock, NoVisibilityLag: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	r := &dayRig{t: t, clock: clock, n: n, keys: keys, channel: keypair.MustRandom(), wallet: keypair.MustRandom(),
		vaultStart: 1_000 * unit, walletUSD: 50 * unit}
	r.usdc = n.IssueAsset("USDC", keypair.MustRandom())
	r.credit = txnbuild.CreditAsset{Code: r.usdc.Code, Issuer: r.usdc.Issuer}
	for _, step := range []func() error{
		func() error { return n.CreateAccount(keys.Vault.Address(), 100*unit) },
		func() error { return n.CreateAccount(keys.Fee.Address(), 100*unit) },
		func() error { return n.CreateAccount(r.channel.Address(), 100*unit) },
		func() error { return n.CreateAccount(r.wallet.Address(), 100*unit) },
		func() error { return n.AddTrustline(keys.Vault.Address(), r.usdc, 0) },
		func() error { return n.AddTrustline(r.wallet.Address(), r.usdc, 0) },
		func() error { return n.Mint(keys.Vault.Address(), r.usdc, r.vaultStart) },
		func() error { return n.Mint(r.wallet.Address(), r.usdc, r.walletUSD) },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	r.ledger, err = stellar.NewRPCLedger(stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: keys}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// closeAt moves the clock to at and closes a ledger there.
func (r *dayRig) closeAt(at time.Time) stellarsim.LedgerInfo {
	r.t.Helper()
	r.clock.Advance(at.Sub(r.clock.Now()))
	li := r.n.CloseLedger()
	if !li.CloseTime.Equal(at) {
		r.t.Fatalf("ledger %d closed at %s, want %s", li.Sequence, li.CloseTime, at)
	}
	return li
}

// send builds a transaction from source (signed by signers) with ops and memo, fee-bumped by
// the fee account when bump, submits it and returns its inner and outer hashes.
func (r *dayRig) send(source *keypair.Full, ops []txnbuild.Operation, memo txnbuild.Memo, bump bool, signers ...*keypair.Full) (string, string) {
	r.t.Helper()
	acct, ok := r.n.Account(source.Address())
	if !ok {
		r.t.Fatal("no account", source.Address())
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: source.Address(), Sequence: acct.Sequence}, IncrementSequenceNum: true,
		BaseFee: txnbuild.MinBaseFee, Operations: ops, Memo: memo,
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, r.clock.Now().Add(5*time.Minute).Unix())},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	if tx, err = tx.Sign(r.n.Passphrase(), signers...); err != nil {
		r.t.Fatal(err)
	}
	inner, _ := tx.HashHex(r.n.Passphrase())
	b64, _ := tx.Base64()
	outer := ""
	if bump {
		fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: tx, FeeAccount: r.keys.Fee.Address(), BaseFee: 200})
		if err != nil {
			r.t.Fatal(err)
		}
		if fb, err = fb.Sign(r.n.Passphrase(), r.keys.Fee); err != nil {
			r.t.Fatal(err)
		}
		outer, _ = fb.HashHex(r.n.Passphrase())
		b64, _ = fb.Base64()
	}
	c := rpcclient.NewClient(r.n.RPCURL(), nil)
	defer func() { _ = c.Close() }()
	resp, err := c.SendTransaction(context.Background(), protocol.SendTransactionRequest{Transaction: b64})
	if err != nil || resp.Status != "PENDING" {
		r.t.Fatalf("sendTransaction: %+v %v", resp, err)
	}
	return inner, outer
}

func (r *dayRig) pay(from, to string, amount string) *txnbuild.Payment {
	return &txnbuild.Payment{Destination: to, Amount: amount, Asset: r.credit, SourceAccount: from}
}

// A day's chain side read from getLedgers and getTransactions, at its boundaries: the day's
// ledgers are exactly those closed from 00:00:00 to 23:59:59 UTC (a ledger closed at midnight is
// the next day's); a classic payment with a text memo, a fee bump around a channel account's
// transaction whose payment's operation source is the vault and whose destination is muxed, and
// an incoming payment, each decoded with its hashes, ledger, amount, memo and muxed id; an
// overdraft included FAILED (its hash kept, nothing moved) and an XLM payment (another operation);
// the vault's actual movement and balances from the metadata. A day not over is refused unless read
// so far; a day past RPC's history is refused.
func TestVaultDayAtTheDayBoundaries(t *testing.T) {
	day := time.Date(2033, 5, 18, 0, 0, 0, 0, time.UTC)
	next := day.Add(24 * time.Hour)
	r := newDayRig(t, day.Add(-10*time.Second)) // ledger 1 (genesis) at 23:59:50 the day before
	vault, wallet := r.keys.Vault.Address(), r.wallet.Address()
	muxed, err := xdr.MuxedAccountFromAccountId(wallet, 7)
	if err != nil {
		t.Fatal(err)
	}

	// 23:59:59 the day before: a payment that is not the day's.
	before, _ := r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", wallet, "9")}, nil, false, r.keys.Vault)
	r.closeAt(day.Add(-time.Second))
	// 00:00:00: the day's first ledger.
	memoPay, _ := r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", wallet, "1.5")}, txnbuild.MemoText("inv-1"), false, r.keys.Vault)
	first := r.closeAt(day)
	// 12:00:00: a channel's transaction in a fee bump, the operation's source the vault, to a
	// muxed destination; and an incoming payment.
	r.clock.Advance(day.Add(12*time.Hour - time.Second).Sub(r.clock.Now()))
	inner, outer := r.send(r.channel, []txnbuild.Operation{r.pay(vault, muxed.Address(), "2.25")}, nil, true, r.channel, r.keys.Vault)
	in, _ := r.send(r.wallet, []txnbuild.Operation{r.pay("", vault, "3")}, txnbuild.MemoID(99), false, r.wallet)
	// The vault pays more than it holds: included FAILED (op_underfunded), nothing moves.
	failed, _ := r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", wallet, "100000")}, nil, false, r.keys.Vault)
	r.closeAt(day.Add(12 * time.Hour))
	// 18:00: the vault pays XLM: not a configured asset, another operation of the vault.
	r.clock.Advance(day.Add(18*time.Hour - time.Second).Sub(r.clock.Now()))
	// With it, a SetOptions of the vault's: it moves nothing and is not listed.
	xlm, _ := r.send(r.keys.Vault, []txnbuild.Operation{&txnbuild.Payment{Destination: wallet, Amount: "1", Asset: txnbuild.NativeAsset{}},
		&txnbuild.SetOptions{LowThreshold: txnbuild.NewThreshold(0)}}, nil, false, r.keys.Vault)
	r.closeAt(day.Add(18 * time.Hour))
	// 23:59:59: the day's last ledger; 00:00:00 the next day's first.
	last := r.closeAt(next.Add(-time.Second))
	after, _ := r.send(r.keys.Vault, []txnbuild.Operation{r.pay("", wallet, "4")}, nil, false, r.keys.Vault)
	r.closeAt(next)

	// The next day is not over: refused; so far, it is read up to the latest ledger.
	if _, err := r.ledger.VaultDay(context.Background(), next, false); !errors.Is(err, transfer.ErrDayNotOver) {
		t.Fatalf("the next day: %v", err)
	}
	sofar, err := r.ledger.VaultDay(context.Background(), next, true)
	if err != nil {
		t.Fatal(err)
	}
	if sofar.FirstLedger != last.Sequence+1 || sofar.LastLedger != last.Sequence+1 || len(sofar.Payments) != 1 ||
		sofar.Payments[0].Hash != after || !sofar.End.Equal(next.Add(time.Second)) {
		t.Fatalf("so far: %+v", sofar)
	}

	got, err := r.ledger.VaultDay(context.Background(), day, false)
	if err != nil {
		t.Fatal(err)
	}
	if got.FirstLedger != first.Sequence || got.LastLedger != last.Sequence || !got.FirstClose.Equal(day) ||
		!got.LastClose.Equal(next.Add(-time.Second)) || got.Transactions != 5 || got.ContractMode {
		t.Fatalf("day %+v", got)
	}
	want := []transfer.ChainPayment{
		{Hash: memoPay, Ledger: first.Sequence, CloseTime: day, Op: 0, Ops: 1, Direction: transfer.DirectionOut, Counterparty: wallet,
			Asset: "USDC", Stroops: 15_000_000, Memo: transfer.Memo{Type: transfer.MemoText, Value: "inv-1"}},
		{Hash: inner, OuterHash: outer, Ledger: first.Sequence + 1, CloseTime: day.Add(12 * time.Hour), Op: 0, Ops: 1,
			Direction: transfer.DirectionOut, Counterparty: wallet, Muxed: muxed.Address(), MuxedID: "7", Asset: "USDC", Stroops: 22_500_000},
		{Hash: in, Ledger: first.Sequence + 1, CloseTime: day.Add(12 * time.Hour), Op: 0, Ops: 1, Direction: transfer.DirectionIn,
			Counterparty: wallet, Asset: "USDC", Stroops: 30_000_000, Memo: transfer.Memo{Type: transfer.MemoID, Value: "99"}},
	}
	// Two transactions of 12:00 apply in the network's order (by hash, as stellar-core shuffles
	// them): compared by hash. The payment of 23:59:59 the day before and the one of midnight
	// after are not the day's.
	if len(got.Payments) != len(want) || got.Payments[0] != want[0] {
		t.Fatalf("payments %+v", got.Payments)
	}
	for _, w := range want {
		found := false
		for _, p := range got.Payments {
			found = found || p == w
		}
		if !found || w.Hash == before || w.Hash == after {
			t.Errorf("payment %+v not read: %+v", w, got.Payments)
		}
	}
	if tx, _ := r.n.Transaction(failed); tx.Status != "FAILED" {
		t.Fatalf("the overdraft: %+v", tx)
	}
	if tx, _ := r.n.Transaction(xlm); tx.Status != "SUCCESS" {
		t.Fatalf("the XLM payment: %+v", tx)
	}
	wantOther := transfer.ChainOther{Hash: xlm, Ledger: first.Sequence + 2, Op: 0, Type: "OperationTypePayment",
		Detail: "a payment of an asset that is not configured, from or to the vault"}
	if len(got.Other) != 1 || got.Other[0] != wantOther || len(got.Failed) != 1 || got.Failed[failed] != first.Sequence+1 {
		t.Fatalf("other %+v failed %+v", got.Other, got.Failed)
	}
	opening := r.vaultStart - 90_000_000
	m := got.Balances["USDC"]
	if !m.Readable || m.Net != -15_000_000-22_500_000+30_000_000 || !m.HasBalances || m.Opening != opening ||
		m.Closing != opening-7_500_000 {
		t.Fatalf("balance %+v (opening %d)", m, opening)
	}

	// Past RPC's history: the day's first ledger is gone.
	if err := r.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ledger.VaultDay(context.Background(), day, false); !errors.Is(err, transfer.ErrHistoryNotCovered) {
		t.Fatalf("past the history: %v", err)
	}
}

// A Horizon-only deployment cannot read a day: refused with ErrDailyNotSupported, without asking
// the network anything.
func TestVaultDayOnHorizonIsRefused(t *testing.T) {
	r := newDayRig(t, time.Date(2033, 5, 18, 12, 0, 0, 0, time.UTC))
	h, err := stellar.NewHorizonLedger(stellar.HorizonConfig{URL: r.n.URL(), Passphrase: r.n.Passphrase(), VaultAccount: r.keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{r.credit}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	var dr transfer.DayReader = h
	if _, err := dr.VaultDay(context.Background(), time.Date(2033, 5, 17, 0, 0, 0, 0, time.UTC), false); !errors.Is(err, transfer.ErrDailyNotSupported) {
		t.Fatalf("Horizon: %v", err)
	}
}
