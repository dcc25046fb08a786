package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// invokeDaily calls ReconcileFunction with payload and decodes its answer as a report.
func invokeDaily(t *testing.T, s *Stack, function, payload string) (reconcile.DailyReport, map[string]any) {
	t.Helper()
	resp, err := http.Post(s.Info.LambdaURL+"/2015-03-31/functions/"+function+"/invocations", "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(resp.Body)
	var r reconcile.DailyReport
	var m map[string]any
	if err := json.Unmarshal(raw.Bytes(), &m); err != nil {
		t.Fatalf("%s: %q: %v", payload, raw.String(), err)
	}
	if resp.Header.Get("X-Amz-Function-Error") != "" || m["code"] != nil {
		return r, m
	}
	if err := json.Unmarshal(raw.Bytes(), &r); err != nil {
		t.Fatalf("%s: %q: %v", payload, raw.String(), err)
	}
	return r, m
}

// payFromVault sends amount stroops of the stack's USDC from the vault to dest directly, signed
// with the vault's key, outside the service, and closes a ledger: a payment no transfer explains.
func payFromVault(t *testing.T, s *Stack, vault *txnbuildKey, dest string, amount string, now time.Time) string {
	t.Helper()
	acct, ok := s.Network.Account(vault.address)
	if !ok {
		t.Fatal("no vault account")
	}
	usdc := txnbuild.CreditAsset{Code: s.Info.Assets[0].Code, Issuer: s.Info.Assets[0].Issuer}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: vault.address, Sequence: acct.Sequence},
		IncrementSequenceNum: true, BaseFee: txnbuild.MinBaseFee,
		Operations:    []txnbuild.Operation{&txnbuild.Payment{Destination: dest, Amount: amount, Asset: usdc}},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, now.Add(5*time.Minute).Unix())},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(s.Network.Passphrase(), vault.keys.Vault); err != nil {
		t.Fatal(err)
	}
	b64, _ := tx.Base64()
	hash, _ := tx.HashHex(s.Network.Passphrase())
	c := rpcclient.NewClient(s.Info.RPCURL, nil)
	defer func() { _ = c.Close() }()
	r, err := c.SendTransaction(context.Background(), protocol.SendTransactionRequest{Transaction: b64})
	if err != nil || r.Status != "PENDING" {
		t.Fatalf("sendTransaction: %+v %v", r, err)
	}
	s.Network.CloseLedger()
	if a, ok := s.Network.Transaction(hash); !ok || a.Status != "SUCCESS" {
		t.Fatalf("the direct payment: %+v", a)
	}
	return hash
}

type txnbuildKey struct {
	keys    signing.Keys
	address string
}

// The daily reconciliation end to end on the local stack, on a virtual clock: a day of clean
// transfers sent from channel accounts in fee bumps (a plain one, a memo one, a muxed one), a
// payment from the vault that no transfer asked for, and a record settled as paid whose
// transaction is not on chain. The report of that day names exactly those two, the amounts and
// the vault's actual movement to the stroop; the next day, with one clean transfer, reports
// nothing, so far and once over. The report is stored and read back, and the run publishes its
// event and metric.
func TestDailyReconciliationOnTheLocalStack(t *testing.T) {
	t.Parallel()
	// 2030-03-18 23:40:00 UTC: the day D is 2030-03-18.
	day := time.Date(2030, 3, 18, 0, 0, 0, 0, time.UTC)
	clock := vclock.New(day.Add(23*time.Hour + 40*time.Minute))
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	emf := newWatched()
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Clock: clock, Keys: &keys, Ops: OpsOptions{Metrics: emf}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	stream := openEvents(t, s.Info.EventsURL)
	wallet, other := s.Info.Wallets[0].Account, s.Info.Wallets[1].Account
	muxed := muxedOf(t, wallet, 42)
	openingVault, err := s.Network.Balance(s.Info.Vault.Account, stellarsim.Asset{Code: s.Info.Assets[0].Code, Issuer: s.Info.Assets[0].Issuer})
	if err != nil {
		t.Fatal(err)
	}

	sent := map[string]reply{}
	for key, body := range map[string]string{
		"daily-plain-00001": withdraw(wallet, "12.5"),
		"daily-memo-000001": withdrawMemo(wallet, "25", `{"type":"id","value":"1234567"}`),
		"daily-muxed-00001": withdraw(muxed, "10"),
	} {
		r := post(t, s, key, body)
		if r.status != http.StatusOK {
			t.Fatalf("POST %s = %d %v", key, r.status, r.body)
		}
		sent[key] = r
		if m := stream.next(t); m.kind != "Transfer Settled" {
			t.Fatalf("event %q", m.kind)
		}
	}
	direct := payFromVault(t, s, &txnbuildKey{keys: keys, address: keys.Vault.Address()}, other, "3.25", clock.Now())

	// A record settled as paid whose transaction never reached the chain: the plain transfer's
	// record under another key, claim and hash.
	plain, err := s.Service.Store.LatestArchive(context.Background(), transfer.StoreKey(wallet, "daily-plain-00001"))
	if err != nil {
		t.Fatal(err)
	}
	ghost := plain
	ghost.Record.StoreKey, ghost.Record.ClientKey, ghost.Record.ClaimID = transfer.StoreKey(wallet, "daily-ghost-00001"), "daily-ghost-00001", transfer.NewClaimID()
	env := *plain.Record.Envelope
	const ghostHash = "00000000000000000000000000000000000000000000000000000000000000aa"
	env.InnerHash, env.OuterHash, env.OuterHashes = ghostHash, "", nil
	res := *plain.Record.Result
	res.TransactionHash = ghostHash
	ghost.Record.Envelope, ghost.Record.Result = &env, &res
	if err := s.Service.Store.PutArchive(context.Background(), ghost); err != nil {
		t.Fatal(err)
	}
	if clock.Now().After(day.Add(24 * time.Hour)) {
		t.Fatalf("the day ended before its transfers were sent: %s", clock.Now())
	}

	// The day is not over: refused, unless asked for so far.
	if _, m := invokeDaily(t, s, reconcileFunction, `{"action":"daily","day":"2030-03-18"}`); m["code"] != reconcile.CodeDayNotOver {
		t.Fatalf("daily before the day's end: %v", m)
	}
	clock.Advance(day.Add(24*time.Hour + 2*time.Minute).Sub(clock.Now()))
	next := post(t, s, "daily-next-000001", withdraw(wallet, "1"))
	if next.status != http.StatusOK {
		t.Fatalf("POST the next day = %d %v", next.status, next.body)
	}
	if m := stream.next(t); m.kind != "Transfer Settled" {
		t.Fatalf("event %q", m.kind)
	}

	r, m := invokeDaily(t, s, reconcileFunction, `{"action":"daily","day":"2030-03-18"}`)
	if m["code"] != nil {
		t.Fatalf("daily: %v", m)
	}
	if r.Day != "2030-03-18" || r.OK || r.Partial || r.Discrepancies != 2 || r.Matched != 3 {
		t.Fatalf("report %+v", r)
	}
	if r.Counts != (reconcile.DailyCounts{Absent: 1, Unexplained: 1}) {
		t.Fatalf("counts %+v", r.Counts)
	}
	if len(r.Absent) != 1 || r.Absent[0].StoreKey != ghost.Record.StoreKey || r.Absent[0].TransactionHash != ghostHash || r.Absent[0].OnChain {
		t.Fatalf("absent %+v", r.Absent)
	}
	u := r.Unknown
	if len(u) != 1 || u[0].Hash != direct || u[0].Direction != transfer.DirectionOut || u[0].Counterparty != other ||
		u[0].Stroops != 32_500_000 || u[0].Asset != "USDC" || u[0].OuterHash != "" || u[0].Note != "" {
		t.Fatalf("unexplained %+v", u)
	}
	// Transfers: 12.5 + 25 + 10 + the ghost's 12.5 = 60; chain: 47.5 by transfers + 3.25 direct.
	if len(r.Assets) != 1 {
		t.Fatalf("assets %+v", r.Assets)
	}
	a := r.Assets[0]
	closing := openingVault - 475_000_000 - 32_500_000
	if a.Asset != "USDC" || a.PaidOut != 600_000_000 || a.Received != 0 || a.Net != -600_000_000 || a.ChainNet != -507_500_000 ||
		a.UnexplainedNet != -32_500_000 || a.InDoubtNet != 0 || !a.ActualReadable || a.ActualNet == nil || *a.ActualNet != -507_500_000 ||
		a.Opening == nil || *a.Opening != openingVault || a.Closing == nil || *a.Closing != closing ||
		a.Difference != 92_500_000 || a.BalanceMismatch {
		t.Fatalf("USDC %+v (opening %d)", a, openingVault)
	}
	// The day's ledgers: every transaction the network applied in them was read (the stack's own
	// setup, the channel accounts' creation, included), and the first ledger of the next day is
	// not among them.
	inDay := 0
	for _, tx := range s.Network.Applied() {
		if !tx.CloseTime.Before(day) && tx.CloseTime.Before(day.Add(24*time.Hour)) {
			inDay++
		}
		if tx.Hash == next.body["transactionHash"] && tx.Ledger <= r.Ledgers.Last {
			t.Fatalf("the next day's transfer in ledger %d, within the day's %+v", tx.Ledger, r.Ledgers)
		}
	}
	if r.Ledgers.First != 1 || r.Ledgers.Last < r.Ledgers.First || !r.Ledgers.LastClose.Before(day.Add(24*time.Hour)) ||
		r.Ledgers.FirstClose.Before(day) || r.Ledgers.Transactions != inDay {
		t.Fatalf("ledgers %+v, want %d transactions", r.Ledgers, inDay)
	}
	// The chain's transfers were fee bumps from channel accounts: each matched by its inner hash.
	for key, sr := range sent {
		if tx, ok := s.Network.Transaction(sr.body["transactionHash"].(string)); !ok || tx.FeeBumpHash == "" {
			t.Fatalf("%s: not a fee bump: %+v", key, tx)
		}
	}
	if ev := stream.next(t); ev.kind != reconcile.DailyDetailType {
		t.Fatalf("event %q, want %s", ev.kind, reconcile.DailyDetailType)
	} else {
		var sum reconcile.DailySummary
		if err := json.Unmarshal(ev.data.Detail, &sum); err != nil || sum.Day != "2030-03-18" || sum.OK || sum.Discrepancies != 2 {
			t.Fatalf("event detail %s: %v", ev.data.Detail, err)
		}
	}
	if !bytes.Contains(emf.bytes(), []byte(`"transfer_orchestration_daily_discrepancies":2`)) {
		t.Fatalf("no discrepancies metric in %s", emf.bytes())
	}

	// Stored, and read back as it was stored, by the reader too.
	for _, fn := range []string{reconcileFunction, readerFunction} {
		got, m := invokeDaily(t, s, fn, `{"action":"report","day":"2030-03-18"}`)
		if m["code"] != nil || got.Discrepancies != 2 || got.Counts != r.Counts || !got.GeneratedAt.Equal(r.GeneratedAt) {
			t.Fatalf("%s report: %+v %v", fn, got, m)
		}
	}

	// The next day (so far): one clean transfer and nothing else.
	sofar, m := invokeDaily(t, s, reconcileFunction, `{"action":"daily","soFar":true}`)
	if m["code"] != nil || sofar.Day != "2030-03-19" || !sofar.Partial || !sofar.OK || sofar.Discrepancies != 0 || sofar.Matched != 1 {
		t.Fatalf("so far: %+v %v", sofar, m)
	}
	if a := sofar.Assets[0]; a.Net != -10_000_000 || a.ChainNet != -10_000_000 || *a.ActualNet != -10_000_000 || a.Difference != 0 {
		t.Fatalf("so far USDC %+v", a)
	}
	if _, m := invokeDaily(t, s, reconcileFunction, `{"action":"report","day":"2030-03-19"}`); m["code"] != reconcile.CodeReportNotFound {
		t.Fatalf("a day so far was stored: %v", m)
	}
	// Once it is over, the next day reports nothing: its one transfer matched, the day before's
	// records (read for a clock behind the ledger's) and the direct payment not its.
	clock.Advance(day.Add(48*time.Hour + time.Minute).Sub(clock.Now()))
	s.Network.CloseLedger()
	clock.Advance(5 * time.Second)
	clean, m := invokeDaily(t, s, reconcileFunction, `{"action":"daily","day":"2030-03-19"}`)
	if m["code"] != nil || clean.Partial || !clean.OK || clean.Discrepancies != 0 || clean.Matched != 1 || clean.Counts != (reconcile.DailyCounts{}) {
		t.Fatalf("the next day: %+v %v", clean, m)
	}
	if a := clean.Assets[0]; a.Net != -10_000_000 || a.ChainNet != -10_000_000 || *a.ActualNet != -10_000_000 || a.Difference != 0 ||
		*a.Opening != closing || *a.Closing != closing-10_000_000 {
		t.Fatalf("the next day's USDC %+v", a)
	}

	// Bad input is refused, never a failure.
	for _, p := range []string{`{"action":"daily","day":"2030-3-18"}`, `{"action":"daily","day":"2031-01-01"}`, `{"action":"report","day":"x"}`} {
		if _, m := invokeDaily(t, s, reconcileFunction, p); m["code"] == nil || m["errorType"] != nil {
			t.Errorf("%s: %v", p, m)
		}
	}
	if _, m := invokeDaily(t, s, readerFunction, `{"action":"daily"}`); m["code"] != reconcile.CodeActionNotAllowed {
		t.Errorf("the reader ran daily: %v", m)
	}
}

// In contract mode the day's transfers are the vault contract's calls: a deposit and a withdrawal
// matched by their hashes (fee bumps from channel accounts), the call's wallet and amount read
// from its arguments; a classic payment straight from the vault account is still the vault's
// movement and is reported. The actual movement is not readable (the contract keeps its own book).
func TestDailyReconciliationInContractMode(t *testing.T) {
	t.Parallel()
	day := time.Date(2030, 3, 18, 0, 0, 0, 0, time.UTC)
	clock := vclock.New(day.Add(12 * time.Hour))
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"VAULT_CONTRACT": "local"}
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Clock: clock, Keys: &keys, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	wallet, other := s.Info.Wallets[0].Account, s.Info.Wallets[1].Account
	hashes := map[string]string{}
	// In this order: the withdrawal draws on the wallet's balance in the contract, which the
	// deposit makes (a withdrawal first is the contract's error #1, VAULT_UNDERFUNDED).
	for _, tr := range []struct{ key, body string }{
		{"daily-deposit-0001", contractTransfer("deposit", wallet, "12.5")},
		{"daily-withdraw-001", contractTransfer("withdraw", wallet, "2.5")},
	} {
		key := tr.key
		r := post(t, s, key, tr.body)
		if r.status != http.StatusOK {
			t.Fatalf("POST %s = %d %v", key, r.status, r.body)
		}
		hashes[key] = r.body["transactionHash"].(string)
	}
	direct := payFromVault(t, s, &txnbuildKey{keys: keys, address: keys.Vault.Address()}, other, "1", clock.Now())
	// Past midnight, a ledger closes; RPC shows it once its ingestion lag (at most 3 s) passed.
	clock.Advance(day.Add(24*time.Hour + time.Minute).Sub(clock.Now()))
	s.Network.CloseLedger()
	clock.Advance(5 * time.Second)

	r, m := invokeDaily(t, s, reconcileFunction, `{"action":"daily","day":"2030-03-18"}`)
	if m["code"] != nil {
		t.Fatalf("daily: %v", m)
	}
	if !r.ContractMode || r.Matched != 2 || r.Discrepancies != 1 || r.Counts != (reconcile.DailyCounts{Unexplained: 1}) {
		t.Fatalf("report %+v", r)
	}
	if u := r.Unknown[0]; u.Hash != direct || u.Stroops != 10_000_000 || u.Counterparty != other || u.Function != "" {
		t.Fatalf("unexplained %+v", u)
	}
	a := r.Assets[0]
	if a.Received != 125_000_000 || a.PaidOut != 25_000_000 || a.Net != 100_000_000 || a.ChainNet != 90_000_000 ||
		a.UnexplainedNet != -10_000_000 || a.ActualReadable || a.ActualNet != nil || a.Difference != -10_000_000 || a.BalanceMismatch {
		t.Fatalf("USDC %+v", a)
	}
	for key, h := range hashes {
		if tx, ok := s.Network.Transaction(h); !ok || tx.FeeBumpHash == "" {
			t.Fatalf("%s: not a fee bump: %+v", key, tx)
		}
	}
}
