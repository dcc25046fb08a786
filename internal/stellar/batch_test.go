package stellar_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// batchLedger is what a batch needs of either backend.
type batchLedger interface {
	transfer.Ledger
	PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error)
	CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]stellar.DestinationCheck, error)
}

// landBatch prepares reqs as one batch on r's ledger, sends it, lets a ledger close and RPC or
// Horizon show it (14 s of r's clock), and returns the envelope and the ledger's answer for it.
func landBatch(t *testing.T, r *fundsRig, reqs []transfer.Request) (transfer.Envelope, transfer.Lookup) {
	t.Helper()
	l := r.ledger.(batchLedger)
	ctx := context.Background()
	env, err := l.PrepareBatch(ctx, reqs, transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	r.clock.Advance(10 * time.Second) // a ledger closes
	r.clock.Advance(4 * time.Second)  // RPC and Horizon show it
	lk, err := l.Lookup(ctx, env)
	if err != nil {
		t.Fatalf("Lookup: %v", err)
	}
	return env, lk
}

func withdraw(wallet string, stroops int64) transfer.Request {
	return transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: stroops}
}

// muxedWithdraw pays the M... address of account with id.
func muxedWithdraw(t *testing.T, account string, id uint64, stroops int64) transfer.Request {
	t.Helper()
	m, err := xdr.MuxedAccountFromAccountId(account, id)
	if err != nil {
		t.Fatal(err)
	}
	req := withdraw(m.Address(), stroops)
	req.Account, req.MuxedID = account, id
	return req
}

// batchInner decodes a batch's envelope: the fee bump's fee and the inner transaction.
func batchInner(t *testing.T, envXDR string) (int64, xdr.Transaction) {
	t.Helper()
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(envXDR, &env); err != nil {
		t.Fatal(err)
	}
	if env.FeeBump == nil {
		t.Fatalf("envelope %s is not a fee bump", env.Type)
	}
	return int64(env.FeeBump.Tx.Fee), env.FeeBump.Tx.InnerTx.V1.Tx
}

// A batch of three payments (one to an M... wallet) is one fee-bumped transaction from a channel:
// operation i pays request i with the vault as its source, the muxed destination kept, the
// terms' timebounds, (3+1) x 100 stroops of fee; it lands, every operation OpLanded, each wallet
// paid exactly its amount. Both backends.
func TestBatchPaysEveryRequestInOneTransaction(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newFundsRig(t, backend, 2, 1_000*unit)
			l := r.ledger.(batchLedger)
			w := []string{r.wallet(t), r.wallet(t), r.wallet(t)}
			reqs := []transfer.Request{withdraw(w[0], 1*unit), muxedWithdraw(t, w[1], 7, 2*unit), withdraw(w[2], 3*unit+1)}
			terms := transfer.Terms{MinTime: time.Unix(12_345, 0), MaxTime: r.clock.Now().Add(time.Minute)}
			ctx := context.Background()
			env, err := l.PrepareBatch(ctx, reqs, terms)
			if err != nil {
				t.Fatal(err)
			}
			fee, tx := batchInner(t, env.XDR)
			if fee != 400 || env.FeeStroops != 400 || env.OuterHash == "" || env.Channel == r.vault {
				t.Fatalf("fee %d, envelope %+v: want a 400-stroop fee bump from a channel", fee, env)
			}
			if tx.SourceAccount.ToAccountId().Address() != env.Channel || len(tx.Operations) != 3 || tx.Memo.Type != xdr.MemoTypeMemoNone {
				t.Fatalf("inner transaction from %s with %d operations", tx.SourceAccount.ToAccountId().Address(), len(tx.Operations))
			}
			if tb := tx.Cond.TimeBounds; tb == nil || tb.MinTime != 12_345 || int64(tb.MaxTime) != terms.MaxTime.Unix() {
				t.Fatalf("timebounds %+v", tx.Cond.TimeBounds)
			}
			wantTo := []string{w[0], reqs[1].WalletAddress, w[2]}
			for i, op := range tx.Operations {
				p := op.Body.PaymentOp
				to, _ := p.Destination.GetAddress()
				if op.SourceAccount == nil || op.SourceAccount.ToAccountId().Address() != r.vault || to != wantTo[i] || int64(p.Amount) != reqs[i].Stroops {
					t.Fatalf("operation %d: %+v to %s", i, op, to)
				}
			}
			if res, err := l.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
				t.Fatalf("Send = %+v, %v", res, err)
			}
			r.clock.Advance(10 * time.Second) // a ledger closes
			r.clock.Advance(4 * time.Second)  // RPC and Horizon show it
			lk, err := l.Lookup(ctx, env)
			if err != nil || lk.Status != transfer.LookupSuccess || lk.FeeChargedStroops != 400 {
				t.Fatalf("Lookup = %+v, %v", lk, err)
			}
			out, err := stellar.LookupOutcomes(lk, 3)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range out {
				if o != (stellar.OpOutcome{Index: i, Code: "op_success", Side: stellar.OpLanded}) {
					t.Fatalf("outcome %d: %+v", i, o)
				}
			}
			for i, want := range []int64{1 * unit, 2 * unit, 3*unit + 1} {
				if got, _ := r.n.Balance(w[i], r.usdc); got != want {
					t.Fatalf("wallet %d holds %d, want %d", i, got, want)
				}
			}
			if got, _ := r.n.Balance(r.vault, r.usdc); got != 994*unit-1 {
				t.Fatalf("vault holds %d", got)
			}
			l.Done(ctx, env)
		})
	}
}

// A batch whose middle destination has no trustline lands FAILED and moves nothing; its outcomes
// name that operation's own code, destination-side, and the others as neighbours (op_success in
// a failed transaction); the network's own result says the same (BatchOutcomes).
func TestBatchWithOneUntrustedDestinationFailsOnItsOperation(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newFundsRig(t, backend, 2, 1_000*unit)
			untrusted := keypair.MustRandom().Address()
			if err := r.n.CreateAccount(untrusted, 10*unit); err != nil {
				t.Fatal(err)
			}
			a, b := r.wallet(t), r.wallet(t)
			reqs := []transfer.Request{withdraw(a, unit), withdraw(untrusted, unit), withdraw(b, unit)}
			env, lk := landBatch(t, r, reqs)
			if lk.Status != transfer.LookupFailed {
				t.Fatalf("Lookup = %+v", lk)
			}
			if want := []string{"tx_failed", "op_success", "op_no_trust", "op_success"}; !slices.Equal(lk.ResultCodes, want) {
				t.Fatalf("result codes %v, want %v", lk.ResultCodes, want)
			}
			out, err := stellar.LookupOutcomes(lk, 3)
			if err != nil {
				t.Fatal(err)
			}
			want := []stellar.OpOutcome{{0, "op_success", stellar.OpNeighbour}, {1, "op_no_trust", stellar.OpDestination}, {2, "op_success", stellar.OpNeighbour}}
			if !slices.Equal(out, want) {
				t.Fatalf("outcomes %+v, want %+v", out, want)
			}
			applied, ok := r.n.Transaction(env.InnerHash)
			if !ok {
				t.Fatal("not applied")
			}
			codes, out2, err := stellar.BatchOutcomes(applied.ResultXDR, 3)
			if err != nil || !slices.Equal(codes, lk.ResultCodes) || !slices.Equal(out2, want) {
				t.Fatalf("BatchOutcomes = %v %+v %v", codes, out2, err)
			}
			for _, w := range []string{a, b} {
				if got, _ := r.n.Balance(w, r.usdc); got != 0 {
					t.Fatalf("wallet holds %d after a failed batch", got)
				}
			}
			if got, _ := r.n.Balance(r.vault, r.usdc); got != 1_000*unit {
				t.Fatalf("vault holds %d after a failed batch", got)
			}
		})
	}
}

// What PrepareBatch refuses before it leases a channel: no request or more than 100
// (ErrBatchSize), a memo (ErrBatchMemo), a second payment to one account and asset, also through
// an M... address of it (ErrBatchDuplicate), a request Prepare refuses (its own
// *transfer.ValidationError), each naming the request's index; and the vault short of the
// batch's sum although it holds each amount (VAULT_UNDERFUNDED). Nothing reaches the network.
func TestPrepareBatchRefusals(t *testing.T) {
	r := newFundsRig(t, "rpc", 2, 5*unit)
	l := r.ledger.(batchLedger)
	ctx := context.Background()
	terms := transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(time.Minute)}
	a, b := r.wallet(t), r.wallet(t)
	sent := len(r.n.Envelopes()) // the channels' creation
	memo := withdraw(b, unit)
	memo.Memo = transfer.Memo{Type: transfer.MemoText, Value: "x"}
	many := make([]transfer.Request, 101)
	for i := range many {
		many[i] = withdraw(a, 1)
	}
	for _, c := range []struct {
		name  string
		reqs  []transfer.Request
		index int
		want  error
	}{
		{"none", nil, -1, stellar.ErrBatchSize},
		{"101", many, -1, stellar.ErrBatchSize},
		{"memo", []transfer.Request{withdraw(a, unit), memo}, 1, stellar.ErrBatchMemo},
		{"duplicate", []transfer.Request{withdraw(a, unit), withdraw(b, unit), muxedWithdraw(t, a, 3, unit)}, 2, stellar.ErrBatchDuplicate},
		{"invalid", []transfer.Request{withdraw(a, unit), withdraw("GNOTANADDRESS", unit)}, 1, nil},
	} {
		_, err := l.PrepareBatch(ctx, c.reqs, terms)
		var be *stellar.BatchRequestError
		switch {
		case c.index < 0:
			if !errors.Is(err, c.want) {
				t.Fatalf("%s: %v, want %v", c.name, err, c.want)
			}
		case !errors.As(err, &be) || be.Index != c.index:
			t.Fatalf("%s: %v, want request %d refused", c.name, err, c.index)
		case c.want != nil && !errors.Is(err, c.want):
			t.Fatalf("%s: %v, want %v", c.name, err, c.want)
		case c.want == nil:
			var ve *transfer.ValidationError
			if !errors.As(err, &ve) || ve.Code != transfer.CodeInvalidAddress {
				t.Fatalf("%s: %v, want INVALID_ADDRESS", c.name, err)
			}
		}
	}
	_, err := l.PrepareBatch(ctx, []transfer.Request{withdraw(a, 3*unit), withdraw(b, 3*unit)}, terms)
	wantCode(t, err, transfer.CodeVaultUnderfunded)
	if got := len(r.n.Envelopes()) - sent; got != 0 {
		t.Fatalf("%d envelopes reached the network", got)
	}
}

// The destination check reads each destination as stellar-core will judge its payment, counting
// payments to one line in order: a wallet that takes it (""), an account that does not exist
// (op_no_destination), one without a trustline (op_no_trust), a line its issuer does not
// authorize (op_not_authorized), a line whose limit, or limit less buying liabilities, leaves
// too little room (op_line_full) and one whose room is exactly the amount (""), a second payment
// to a line the first filled (op_line_full); the vault as a wallet is its own refusal (Err). The
// vault's line covers the passing sum; 1 stroop more is VAULT_UNDERFUNDED with the checks. Both
// backends.
func TestCheckDestinationsJudgesAsTheNetworkWill(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newFundsRig(t, backend, 0, 1_000*unit)
			l := r.ledger.(batchLedger)
			ok := r.wallet(t)
			missing := keypair.MustRandom().Address()
			noTrust := keypair.MustRandom().Address()
			if err := r.n.CreateAccount(noTrust, 10*unit); err != nil {
				t.Fatal(err)
			}
			unauth := r.wallet(t)
			if err := r.n.SetTrustlineAuth(unauth, r.usdc, stellarsim.Unauthorized); err != nil {
				t.Fatal(err)
			}
			limited := func(limit, buying int64) string {
				w := keypair.MustRandom().Address()
				if err := r.n.CreateAccount(w, 10*unit); err != nil {
					t.Fatal(err)
				}
				if err := r.n.AddTrustline(w, r.usdc, limit); err != nil {
					t.Fatal(err)
				}
				if err := r.n.SetLiabilities(w, r.usdc, buying, 0); err != nil {
					t.Fatal(err)
				}
				return w
			}
			full := limited(5*unit, 0)
			liab := limited(10*unit, 5*unit+1)
			exact := limited(10*unit, 5*unit)
			shared := limited(8*unit, 0)
			reqs := []transfer.Request{
				withdraw(ok, 100*unit), withdraw(missing, unit), withdraw(noTrust, unit), withdraw(unauth, unit),
				withdraw(full, 5*unit+1), withdraw(liab, 5*unit), withdraw(exact, 5*unit), withdraw(r.vault, unit),
				muxedWithdraw(t, shared, 1, 5*unit), withdraw(shared, 5*unit),
			}
			ctx := context.Background()
			checks, err := l.CheckDestinations(ctx, reqs)
			if err != nil {
				t.Fatal(err)
			}
			want := []string{"", "op_no_destination", "op_no_trust", "op_not_authorized", "op_line_full", "op_line_full", "", "", "", "op_line_full"}
			for i, c := range checks {
				if c.Code != want[i] || (i == 7) != (c.Err != nil) {
					t.Fatalf("check %d: %+v, want code %q", i, c, want[i])
				}
			}
			if ve, ok := errors.AsType[*transfer.ValidationError](checks[7].Err); !ok || ve.Code != transfer.CodeInvalidAddress {
				t.Fatalf("the vault as a wallet: %v, want INVALID_ADDRESS", checks[7].Err)
			}
			// The passing sum is 100 + 5 + 5 = 110 units: the vault holds 1,000. Take 890 units
			// and 1 stroop away (a payment out of band) and it no longer covers them.
			if err := r.n.Burn(r.vault, r.usdc, 890*unit+1); err != nil {
				t.Fatal(err)
			}
			checks, err = l.CheckDestinations(ctx, reqs)
			wantCode(t, err, transfer.CodeVaultUnderfunded)
			if len(checks) != len(reqs) || checks[0].Code != "" || checks[1].Code != "op_no_destination" {
				t.Fatalf("checks with the vault short: %+v", checks)
			}
		})
	}
}

// 100 destinations, each with its trustline, are read in one getLedgerEntries call of 101 keys
// (with the vault's line) and all pass.
func TestCheckDestinationsOfAFullBatch(t *testing.T) {
	r := newFundsRig(t, "rpc", 0, 1_000*unit)
	l := r.ledger.(batchLedger)
	reqs := make([]transfer.Request, stellar.MaxBatchPayments)
	for i := range reqs {
		reqs[i] = withdraw(r.wallet(t), unit)
	}
	checks, err := l.CheckDestinations(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range checks {
		if c != (stellar.DestinationCheck{}) {
			t.Fatalf("check %d: %+v", i, c)
		}
	}
	if _, err := l.CheckDestinations(context.Background(), append(reqs, withdraw(r.wallet(t), unit))); !errors.Is(err, stellar.ErrBatchSize) {
		t.Fatalf("101 destinations: %v, want ErrBatchSize", err)
	}
}

// countingTransport counts the JSON-RPC requests of one method.
type countingTransport struct {
	method string
	mu     sync.Mutex
	n      int
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"method":"`+c.method+`"`)) {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
	}
	return http.DefaultTransport.RoundTrip(req)
}

func (c *countingTransport) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// Over Stellar RPC the check is one getLedgerEntries call when every destination has its
// trustline, and one more (for the accounts) when some have none.
func TestCheckDestinationsReadsInOneCall(t *testing.T) {
	r := newFundsRig(t, "rpc", 0, 1_000*unit)
	ct := &countingTransport{method: "getLedgerEntries"}
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.n.RPCURL(), Passphrase: r.n.Passphrase(), VaultAccount: r.vault,
		Assets: []txnbuild.CreditAsset{{Code: r.usdc.Code, Issuer: r.usdc.Issuer}}, Keys: signing.StaticKeys{K: r.keys}, Clock: r.clock,
		HTTPClient: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	reqs := make([]transfer.Request, 50)
	for i := range reqs {
		reqs[i] = withdraw(r.wallet(t), unit)
	}
	if _, err := l.CheckDestinations(context.Background(), reqs); err != nil || ct.count() != 1 {
		t.Fatalf("%v, %d calls, want 1", err, ct.count())
	}
	reqs = append(reqs, withdraw(keypair.MustRandom().Address(), unit))
	checks, err := l.CheckDestinations(context.Background(), reqs)
	if err != nil || ct.count() != 3 || checks[50].Code != "op_no_destination" {
		t.Fatalf("%v, %d calls in all, want 3; %+v", err, ct.count(), checks[50])
	}
}

// opResult is a payment operation's result with code c.
func opResult(c xdr.PaymentResultCode) xdr.OperationResult {
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &xdr.OperationResultTr{Type: xdr.OperationTypePayment,
		PaymentResult: &xdr.PaymentResult{Code: c}}}
}

// BatchOutcomes reads a fee bump's inner result: each operation's code and side; a
// transaction-level failure (no operation results) is every operation OpNoResult; an opBAD_AUTH
// is the operation's own (OpOwn); a count of results other than the batch's is an error.
func TestBatchOutcomesClassifies(t *testing.T) {
	encode := func(code xdr.TransactionResultCode, ops []xdr.OperationResult) string {
		inner := xdr.InnerTransactionResult{Result: xdr.InnerTransactionResultResult{Code: code}}
		if code == xdr.TransactionResultCodeTxFailed || code == xdr.TransactionResultCodeTxSuccess {
			inner.Result.Results = &ops
		}
		outer := xdr.TransactionResultCodeTxFeeBumpInnerFailed
		if code == xdr.TransactionResultCodeTxSuccess {
			outer = xdr.TransactionResultCodeTxFeeBumpInnerSuccess
		}
		r := xdr.TransactionResult{FeeCharged: 400, Result: xdr.TransactionResultResult{Code: outer,
			InnerResultPair: &xdr.InnerTransactionResultPair{Result: inner}}}
		s, err := xdr.MarshalBase64(r)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	ops := []xdr.OperationResult{opResult(xdr.PaymentResultCodePaymentSuccess), opResult(xdr.PaymentResultCodePaymentUnderfunded),
		{Code: xdr.OperationResultCodeOpBadAuth}, opResult(xdr.PaymentResultCodePaymentNotAuthorized)}
	codes, out, err := stellar.BatchOutcomes(encode(xdr.TransactionResultCodeTxFailed, ops), 4)
	want := []stellar.OpOutcome{{0, "op_success", stellar.OpNeighbour}, {1, "op_underfunded", stellar.OpSource},
		{2, "op_bad_auth", stellar.OpOwn}, {3, "op_not_authorized", stellar.OpDestination}}
	if err != nil || !slices.Equal(out, want) || !slices.Equal(codes, []string{"tx_failed", "op_success", "op_underfunded", "op_bad_auth", "op_not_authorized"}) {
		t.Fatalf("BatchOutcomes = %v %+v %v", codes, out, err)
	}
	_, out, err = stellar.BatchOutcomes(encode(xdr.TransactionResultCodeTxInsufficientBalance, nil), 2)
	if err != nil || !slices.Equal(out, []stellar.OpOutcome{{0, "", stellar.OpNoResult}, {1, "", stellar.OpNoResult}}) {
		t.Fatalf("a transaction-level failure: %+v %v", out, err)
	}
	if _, _, err := stellar.BatchOutcomes(encode(xdr.TransactionResultCodeTxFailed, ops), 3); err == nil {
		t.Fatal("4 results for a batch of 3: no error")
	}
	if _, err := stellar.LookupOutcomes(transfer.Lookup{Status: transfer.LookupNotFound}, 3); err == nil {
		t.Fatal("NOT_FOUND: no error")
	}
}

// Without channel accounts the vault is the batch's transaction source and pays its own fee, n
// base fees for n payments (no fee bump), and the batch lands.
func TestBatchFromTheVaultPaysNBaseFees(t *testing.T) {
	r := newFundsRig(t, "rpc", 0, 1_000*unit)
	l := r.ledger.(batchLedger)
	a, b := r.wallet(t), r.wallet(t)
	ctx := context.Background()
	env, err := l.PrepareBatch(ctx, []transfer.Request{withdraw(a, unit), withdraw(b, 2*unit)},
		transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if env.OuterHash != "" || env.Channel != r.vault || env.FeeStroops != 200 {
		t.Fatalf("envelope %+v, want the vault's own transaction at 200 stroops", env)
	}
	if res, err := l.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	r.clock.Advance(10 * time.Second)
	r.clock.Advance(4 * time.Second)
	lk, err := l.Lookup(ctx, env)
	if err != nil || lk.Status != transfer.LookupSuccess || lk.FeeChargedStroops != 200 {
		t.Fatalf("Lookup = %+v, %v", lk, err)
	}
	if got, _ := r.n.Balance(b, r.usdc); got != 2*unit {
		t.Fatalf("wallet holds %d", got)
	}
	l.Done(ctx, env)
}

// A batch is replaced by fee as one transfer is (transfer.Replacer): the same signed inner
// transaction of 3 payments in a new fee bump bidding at least 10x its rate over its 4 slots;
// the network takes it in place of the queued one, and it lands, paying each wallet once.
func TestBatchReplacedByFeeLands(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 1_000_000)
		l := r.ledger.(batchLedger)
		var w []string
		var reqs []transfer.Request
		for i := range 3 {
			a := keypair.MustRandom().Address()
			if err := r.net.CreateAccount(a, 10*unit); err != nil {
				t.Fatal(err)
			}
			if err := r.net.AddTrustline(a, r.usdc, 0); err != nil {
				t.Fatal(err)
			}
			w = append(w, a)
			reqs = append(reqs, withdraw(a, int64(i+1)*unit))
		}
		ctx := context.Background()
		env, err := l.PrepareBatch(ctx, reqs, transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(2 * time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		if res, err := l.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
			t.Fatalf("Send = %+v, %v", res, err)
		}
		next, err := r.ledger.(transfer.Replacer).Replace(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if next.InnerHash != env.InnerHash || next.OuterHash == env.OuterHash || offered(t, next.XDR) < 10*offered(t, env.XDR) ||
			next.FeeStroops != 4*offered(t, next.XDR) {
			t.Fatalf("replacement %+v bids %d per slot, first %d", next, offered(t, next.XDR), offered(t, env.XDR))
		}
		if res, err := l.Send(ctx, next); err != nil || res.Status != transfer.SendPending {
			t.Fatalf("Send replacement = %+v, %v", res, err)
		}
		r.ledgers(2)
		a, ok := r.net.Transaction(env.InnerHash)
		if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != next.OuterHash {
			t.Fatalf("applied %+v (%v), want the replacement", a, ok)
		}
		for i, addr := range w {
			if got, _ := r.net.Balance(addr, r.usdc); got != int64(i+1)*unit {
				t.Fatalf("wallet %d holds %d", i, got)
			}
		}
		l.Done(ctx, next)
	})
}

// A contract deployment never batches: its ledger refuses both batch calls, and nothing is sent.
func TestContractLedgerDoesNotBatch(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	sent := len(r.net.Envelopes())
	ctx := context.Background()
	reqs := []transfer.Request{withdraw(r.wallet, unit), withdraw(keypair.MustRandom().Address(), unit)}
	if _, err := r.ledger.PrepareBatch(ctx, reqs, transfer.Terms{MaxTime: r.clock.Now().Add(time.Minute)}); !errors.Is(err, stellar.ErrBatchContract) {
		t.Fatalf("PrepareBatch: %v, want ErrBatchContract", err)
	}
	if _, err := r.ledger.CheckDestinations(ctx, reqs); !errors.Is(err, stellar.ErrBatchContract) {
		t.Fatalf("CheckDestinations: %v, want ErrBatchContract", err)
	}
	if got := len(r.net.Envelopes()) - sent; got != 0 {
		t.Fatalf("%d envelopes sent", got)
	}
}

// A full batch: 100 payments in one fee bump of 101 x 100 stroops (1.01 base fees a payment,
// against 2 for a fee-bumped payment alone), counted as 101 classic operations by the ledger that
// takes it, every wallet paid once.
func TestFullBatchOf100Lands(t *testing.T) {
	r := newFundsRig(t, "rpc", 2, 1_000*unit)
	l := r.ledger.(batchLedger)
	reqs := make([]transfer.Request, stellar.MaxBatchPayments)
	for i := range reqs {
		reqs[i] = withdraw(r.wallet(t), int64(i+1))
	}
	env, lk := landBatch(t, r, reqs)
	if env.FeeStroops != 10_100 {
		t.Fatalf("fee %d, want 10,100", env.FeeStroops)
	}
	if lk.Status != transfer.LookupSuccess || lk.FeeChargedStroops != 10_100 {
		t.Fatalf("Lookup = %+v", lk)
	}
	if got := r.n.CongestionReport(1).Ledgers[0]; got.Sequence != lk.Ledger || got.ClassicOps != 101 {
		t.Fatalf("ledger %+v, want ledger %d with 101 classic operations", got, lk.Ledger)
	}
	for i, req := range reqs {
		if got, _ := r.n.Balance(req.WalletAddress, r.usdc); got != int64(i+1) {
			t.Fatalf("wallet %d holds %d", i, got)
		}
	}
	l.Done(context.Background(), env)
}
