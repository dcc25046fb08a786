package stellar

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

const testPassphrase = network.TestNetworkPassphrase

type unitEnv struct {
	fake   *fakeRPC
	url    string
	keys   signing.Keys
	issuer *keypair.Full
	ledger *RPCLedger
}

func newUnitEnv(t *testing.T, mutate ...func(*RPCConfig)) *unitEnv {
	t.Helper()
	fake, srv := newFakeRPC(t)
	keys := sourcestest.Keys(t)
	issuer := keypair.MustRandom()
	cfg := RPCConfig{
		URL: srv.URL, Passphrase: testPassphrase, VaultAccount: keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: issuer.Address()}},
		Keys:   signing.StaticKeys{K: keys}, BaseFeeStroops: 250, MaxFeeStroops: 10_000,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	l, err := NewRPCLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	answerEntries(t, fake, 41)
	header, err := xdr.MarshalBase64(xdr.LedgerHeader{LedgerSeq: 77, BaseReserve: 5_000_000, BaseFee: 100})
	if err != nil {
		t.Fatal(err)
	}
	fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerCloseTime: 1_700_000_000, LedgerHeader: header})
	return &unitEnv{fake: fake, url: srv.URL, keys: keys, issuer: issuer, ledger: l}
}

func withdraw(wallet string, stroops int64) transfer.Request {
	return transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "x", Asset: "USDC", Stroops: stroops}
}

func TestPrepareWithdraw(t *testing.T) {
	e := newUnitEnv(t)
	wallet := keypair.MustRandom().Address()
	maxTime := time.Unix(1_700_000_060, 0)
	env, err := e.ledger.Prepare(context.Background(), withdraw(wallet, 10_005_000_000), transfer.Terms{MaxTime: maxTime})
	if err != nil {
		t.Fatal(err)
	}
	if env.Channel != e.keys.Vault.Address() || env.MaxTime != maxTime.Unix() || env.SubmittedLedger != 77 ||
		env.FeeStroops != 250 || env.OuterHash != "" {
		t.Errorf("envelope facts: %+v", env)
	}
	gtx, err := txnbuild.TransactionFromXDR(env.XDR)
	if err != nil {
		t.Fatal(err)
	}
	tx, ok := gtx.Transaction()
	if !ok {
		t.Fatal("not a plain transaction")
	}
	if tx.SourceAccount().AccountID != e.keys.Vault.Address() || tx.SequenceNumber() != 42 || tx.BaseFee() != 250 {
		t.Errorf("tx: source %s seq %d fee %d", tx.SourceAccount().AccountID, tx.SequenceNumber(), tx.BaseFee())
	}
	if tb := tx.Timebounds(); tb.MinTime != 0 || tb.MaxTime != maxTime.Unix() {
		t.Errorf("timebounds %+v", tb)
	}
	ops := tx.Operations()
	pay, ok := ops[0].(*txnbuild.Payment)
	if len(ops) != 1 || !ok || pay.Destination != wallet || pay.Amount != "1000.5000000" ||
		pay.Asset.GetCode() != "USDC" || pay.Asset.GetIssuer() != e.issuer.Address() || pay.SourceAccount != "" {
		t.Errorf("operations: %#v", ops)
	}
	hash, err := network.HashTransactionInEnvelope(tx.ToXDR(), testPassphrase)
	if err != nil {
		t.Fatal(err)
	}
	if env.InnerHash != strings.ToLower(env.InnerHash) || env.InnerHash != hexHash(hash) {
		t.Errorf("InnerHash %s, want %s", env.InnerHash, hexHash(hash))
	}
	sigs := tx.Signatures()
	if len(sigs) != 1 || e.keys.Vault.Verify(hash[:], sigs[0].Signature) != nil {
		t.Errorf("not signed by the vault: %d signatures", len(sigs))
	}
	if got := e.fake.methods(); !slices.Equal(got, []string{"getLatestLedger", "getLedgerEntries"}) {
		t.Errorf("RPC calls %v", got)
	}
}

func hexHash(h [32]byte) string {
	const digits = "0123456789abcdef"
	b := make([]byte, 64)
	for i, c := range h {
		b[2*i], b[2*i+1] = digits[c>>4], digits[c&15]
	}
	return string(b)
}

func TestPrepareRefusesWhatItCannotDo(t *testing.T) {
	e := newUnitEnv(t)
	g := keypair.MustRandom().Address()
	contract := strkey.MustEncode(strkey.VersionByteContract, make([]byte, 32))
	maxTime := time.Unix(1_700_000_060, 0)
	deposit := withdraw(g, 1)
	deposit.OperationType = transfer.Deposit
	otherAsset := withdraw(g, 1)
	otherAsset.Asset = "EURC"
	cases := []struct {
		name    string
		req     transfer.Request
		maxTime time.Time
		code    string
		detail  string
	}{
		{"deposit", deposit, maxTime, transfer.CodeOperationNotSupp, "deposits need a vault contract"},
		{"contract wallet", withdraw(contract, 1), maxTime, transfer.CodeOperationNotSupp, "contract addresses (C...)"},
		{"seed as wallet", withdraw(e.keys.Fee.Seed(), 1), maxTime, transfer.CodeInvalidAddress, "G... account"},
		{"unknown asset", otherAsset, maxTime, transfer.CodeInvalidAsset, "EURC"},
		{"zero amount", withdraw(g, 0), maxTime, transfer.CodeInvalidAmount, "greater than zero"},
		{"the vault itself", withdraw(e.keys.Vault.Address(), 1), maxTime, transfer.CodeInvalidAddress, "the vault itself"},
		{"the asset's issuer", withdraw(e.issuer.Address(), 1), maxTime, transfer.CodeInvalidAddress, "issuer of USDC"},
	}
	for _, c := range cases {
		_, err := e.ledger.Prepare(context.Background(), c.req, transfer.Terms{MaxTime: c.maxTime})
		var ve *transfer.ValidationError
		if !errors.As(err, &ve) || ve.Code != c.code || ve.Kind != transfer.KindUnacceptable || !strings.Contains(ve.Detail, c.detail) {
			t.Errorf("%s: %v", c.name, err)
		}
		if err != nil && strings.Contains(err.Error(), e.keys.Fee.Seed()) {
			t.Errorf("%s: error echoes a seed", c.name)
		}
	}
	if _, err := e.ledger.Prepare(context.Background(), withdraw(g, 1), transfer.Terms{MaxTime: time.Time{}}); err == nil {
		t.Error("unbounded maxTime accepted")
	}
	if got := e.fake.methods(); len(got) != 0 {
		t.Errorf("refusals called the RPC: %v", got)
	}
}

func TestPrepareFailures(t *testing.T) {
	wallet := keypair.MustRandom().Address()
	maxTime := time.Unix(1_700_000_060, 0)
	ctx := context.Background()

	// The vault account does not exist: 503, typed, nothing sent.
	e := newUnitEnv(t)
	e.fake.answer("getLedgerEntries", protocol.GetLedgerEntriesResponse{LatestLedger: 77})
	_, err := e.ledger.Prepare(ctx, withdraw(wallet, 1), transfer.Terms{MaxTime: maxTime})
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != transfer.CodeNetworkUnavailable || !errors.Is(err, ErrAccountMissing) {
		t.Errorf("missing account: %v", err)
	}

	// The keys cannot be loaded: 503, typed, no seed in the message.
	bad := `{"vaultSeed":"` + e.keys.Vault.Seed()[:50] + `"}`
	local := signing.NewLocalSecrets()
	local.Put("s", []byte(bad))
	src, _ := signing.NewSecretKeys(signing.SecretKeysConfig{Client: local, SecretID: "s"})
	e = newUnitEnv(t, func(c *RPCConfig) { c.Keys = src })
	_, err = e.ledger.Prepare(ctx, withdraw(wallet, 1), transfer.Terms{MaxTime: maxTime})
	if !errors.As(err, &ue) || ue.Code != CodeSigningKeysUnavailable || strings.Contains(err.Error(), e.keys.Vault.Seed()[:20]) {
		t.Errorf("keys: %v", err)
	}

	// The RPC is unreachable: a plain error (the breaker counts it), never a typed one.
	e = newUnitEnv(t, func(c *RPCConfig) { c.URL = closedURL(t) })
	_, err = e.ledger.Prepare(ctx, withdraw(wallet, 1), transfer.Terms{MaxTime: maxTime})
	var pe transfer.ProblemError
	if err == nil || errors.As(err, &pe) {
		t.Errorf("unreachable: %v", err)
	}

	// A JSON-RPC error answer is a plain error too.
	e = newUnitEnv(t)
	e.fake.handle("getLatestLedger", func(json.RawMessage) (any, *rpcError) { return nil, &rpcError{Code: -32603, Message: "boom"} })
	if _, err = e.ledger.Prepare(ctx, withdraw(wallet, 1), transfer.Terms{MaxTime: maxTime}); err == nil || errors.As(err, &pe) {
		t.Errorf("rpc error: %v", err)
	}
}

func TestNewRPCLedgerChecksConfig(t *testing.T) {
	keys := sourcestest.Keys(t)
	issuer := keypair.MustRandom().Address()
	good := RPCConfig{URL: "http://127.0.0.1:8010/rpc", Passphrase: testPassphrase, VaultAccount: keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: issuer}}, Keys: signing.StaticKeys{K: keys}}
	if _, err := NewRPCLedger(good); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*RPCConfig){
		"url":        func(c *RPCConfig) { c.URL = "127.0.0.1:8010" },
		"passphrase": func(c *RPCConfig) { c.Passphrase = "" },
		"vault":      func(c *RPCConfig) { c.VaultAccount = keys.Vault.Seed() },
		"keys":       func(c *RPCConfig) { c.Keys = nil },
		"no assets":  func(c *RPCConfig) { c.Assets = nil },
		"issuer":     func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "USDC", Issuer: "GX"}} },
		"dup asset":  func(c *RPCConfig) { c.Assets = append(c.Assets, txnbuild.CreditAsset{Code: "usdc", Issuer: issuer}) },
		"fee cap":    func(c *RPCConfig) { c.BaseFeeStroops, c.MaxFeeStroops = 500, 400 },
		"low fee":    func(c *RPCConfig) { c.BaseFeeStroops = 10 },
	} {
		c := good
		mutate(&c)
		l, err := NewRPCLedger(c)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), keys.Vault.Seed()) {
			t.Errorf("%s: error shows a seed", name)
		}
		_ = l
	}
}

func errorResultXDR(t *testing.T, r xdr.TransactionResult) string {
	t.Helper()
	b64, err := xdr.MarshalBase64(r)
	if err != nil {
		t.Fatal(err)
	}
	return b64
}

func TestSendMapsAnswers(t *testing.T) {
	e := newUnitEnv(t)
	env := transfer.Envelope{XDR: "AAAA", InnerHash: strings.Repeat("ab", 32)}
	cases := []struct {
		resp protocol.SendTransactionResponse
		want transfer.SendResult
	}{
		{protocol.SendTransactionResponse{Status: "PENDING", Hash: env.InnerHash, LatestLedger: 80, LatestLedgerCloseTime: 1_700_000_100},
			transfer.SendResult{Status: transfer.SendPending, LatestLedger: 80, LatestLedgerCloseTime: time.Unix(1_700_000_100, 0).UTC()}},
		{protocol.SendTransactionResponse{Status: "DUPLICATE", Hash: strings.ToUpper(env.InnerHash), LatestLedger: 81},
			transfer.SendResult{Status: transfer.SendDuplicate, LatestLedger: 81}},
		{protocol.SendTransactionResponse{Status: "TRY_AGAIN_LATER", LatestLedger: 82},
			transfer.SendResult{Status: transfer.SendTryAgainLater, LatestLedger: 82}},
		{protocol.SendTransactionResponse{Status: "ERROR", Hash: env.InnerHash, LatestLedger: 83,
			ErrorResultXDR: errorResultXDR(t, txResult(0, xdr.TransactionResultCodeTxBadSeq))},
			transfer.SendResult{Status: transfer.SendError, Code: "txBAD_SEQ", LatestLedger: 83}},
		{protocol.SendTransactionResponse{Status: "ERROR", LatestLedger: 84,
			ErrorResultXDR: errorResultXDR(t, txResult(0, xdr.TransactionResultCodeTxInsufficientFee))},
			transfer.SendResult{Status: transfer.SendError, Code: "txINSUFFICIENT_FEE", LatestLedger: 84}},
		{protocol.SendTransactionResponse{Status: "ERROR", LatestLedger: 85,
			ErrorResultXDR: errorResultXDR(t, txResult(0, xdr.TransactionResultCodeTxTooLate))},
			transfer.SendResult{Status: transfer.SendError, Code: "txTOO_LATE", LatestLedger: 85}},
		{protocol.SendTransactionResponse{Status: "ERROR", LatestLedger: 86,
			ErrorResultXDR: errorResultXDR(t, feeBumpResult(0, xdr.TransactionResultCodeTxBadSeq))},
			transfer.SendResult{Status: transfer.SendError, Code: "txBAD_SEQ", LatestLedger: 86}},
		// An ERROR whose result cannot be read carries no code: it proves nothing.
		{protocol.SendTransactionResponse{Status: "ERROR", LatestLedger: 87, ErrorResultXDR: "not-xdr"},
			transfer.SendResult{Status: transfer.SendError, LatestLedger: 87}},
	}
	for _, c := range cases {
		e.fake.answer("sendTransaction", c.resp)
		got, err := e.ledger.Send(context.Background(), env)
		if err != nil || got.Status != c.want.Status || got.Code != c.want.Code || got.LatestLedger != c.want.LatestLedger ||
			!got.LatestLedgerCloseTime.Equal(c.want.LatestLedgerCloseTime) {
			t.Errorf("%s: got %+v, %v; want %+v", c.resp.Status, got, err, c.want)
		}
	}
	// Answers that say nothing certain are errors, and not ErrNotSent.
	for _, resp := range []protocol.SendTransactionResponse{
		{Status: "WHATEVER"},
		{Status: "PENDING", Hash: strings.Repeat("cd", 32)},
	} {
		e.fake.answer("sendTransaction", resp)
		if _, err := e.ledger.Send(context.Background(), env); err == nil || errors.Is(err, transfer.ErrNotSent) {
			t.Errorf("%+v: %v", resp, err)
		}
	}
	e.fake.handle("sendTransaction", func(json.RawMessage) (any, *rpcError) { return nil, &rpcError{Code: -32602, Message: "invalid params"} })
	if _, err := e.ledger.Send(context.Background(), env); err == nil || errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("json-rpc error: %v", err)
	}
}

// closedURL is the URL of a port nobody listens on: connecting is refused.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/rpc"
}

// droppingURL accepts each connection, reads the request and closes without answering.
func droppingURL(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	got := make(chan int, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 64<<10)
			_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, _ := c.Read(buf)
			got <- n
			c.Close()
		}
	}()
	return "http://" + ln.Addr().String() + "/rpc", func() int { return <-got }
}

func TestSendTransportFailures(t *testing.T) {
	env := transfer.Envelope{XDR: "AAAA", InnerHash: strings.Repeat("ab", 32)}
	ctx := context.Background()
	ledgerAt := func(url string) *RPCLedger {
		return newUnitEnv(t, func(c *RPCConfig) {
			c.URL = url
			c.HTTPClient = &http.Client{Timeout: 5 * time.Second}
		}).ledger
	}

	// Refused: nothing was written.
	_, err := ledgerAt(closedURL(t)).Send(ctx, env)
	if !errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("refused: %v, want ErrNotSent", err)
	}
	// DNS failure: nothing was written.
	_, err = ledgerAt("http://stellar-rpc.invalid/rpc").Send(ctx, env)
	if !errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("dns: %v, want ErrNotSent", err)
	}

	// Accepted, read, dropped: the request reached the server, so the outcome is unknown.
	url, written := droppingURL(t)
	_, err = ledgerAt(url).Send(ctx, env)
	if err == nil || errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("dropped after write: %v, want a plain error", err)
	}
	if n := written(); n == 0 {
		t.Error("the dropping server read nothing")
	}

	// HTTP 5xx and malformed bodies: answered by something, outcome unknown.
	for name, h := range map[string]http.HandlerFunc{
		"500":      func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "upstream", http.StatusBadGateway) },
		"bad json": func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "{not json") },
	} {
		srv := httptest.NewServer(h)
		_, err = ledgerAt(srv.URL).Send(ctx, env)
		if err == nil || errors.Is(err, transfer.ErrNotSent) {
			t.Errorf("%s: %v, want a plain error", name, err)
		}
		srv.Close()
	}

	// The caller's deadline passes while the request is in flight: unknown.
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, err = ledgerAt(srv.URL).Send(tctx, env)
	if err == nil || errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("timeout: %v, want a plain error", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Send outlived its context by %v (rpcclient waits for the HTTP request)", d)
	}

	// An empty envelope is never sent.
	if _, err := ledgerAt(srv.URL).Send(ctx, transfer.Envelope{}); !errors.Is(err, transfer.ErrNotSent) {
		t.Errorf("empty envelope: %v", err)
	}
}

func TestLookup(t *testing.T) {
	e := newUnitEnv(t)
	inner, outer := strings.Repeat("11", 32), strings.Repeat("22", 32)
	failed := errorResultXDR(t, txResult(100, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentUnderfunded)))
	success := errorResultXDR(t, feeBumpResult(400, xdr.TransactionResultCodeTxSuccess, paymentOp(xdr.PaymentResultCodePaymentSuccess)))
	byHash := map[string]protocol.GetTransactionResponse{}
	e.fake.handle("getTransaction", func(p json.RawMessage) (any, *rpcError) {
		var req protocol.GetTransactionRequest
		_ = json.Unmarshal(p, &req)
		if r, ok := byHash[req.Hash]; ok {
			return r, nil
		}
		return protocol.GetTransactionResponse{LatestLedger: 90, LatestLedgerCloseTime: 1_700_000_500, OldestLedger: 10,
			TransactionDetails: protocol.TransactionDetails{Status: "NOT_FOUND"}}, nil
	})
	ctx := context.Background()
	e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 85, LedgerCloseTime: 1_700_000_400})

	// NOT_FOUND, with the history's bounds and the ledger read BEFORE the search (stellar-rpc reads
	// the transaction before the ledger range, so the answer's own latest ledger proves nothing).
	lk, err := e.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner})
	if err != nil || lk.Status != transfer.LookupNotFound || lk.LatestLedger != 85 || lk.OldestLedger != 10 ||
		!lk.LatestLedgerCloseTime.Equal(time.Unix(1_700_000_400, 0)) || lk.Hash != "" {
		t.Errorf("not found: %+v, %v", lk, err)
	}

	// An answer whose range ends before the ledger read first came from a lagging instance: its
	// history is not claimed to cover anything.
	e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 95, LedgerCloseTime: 1_700_000_600})
	lk, err = e.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner})
	if err != nil || lk.Status != transfer.LookupNotFound || lk.LatestLedger != 95 || lk.OldestLedger != 0 {
		t.Errorf("lagging instance: %+v, %v", lk, err)
	}
	e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 85, LedgerCloseTime: 1_700_000_400})

	// FAILED: codes and fee.
	byHash[inner] = protocol.GetTransactionResponse{LatestLedger: 91, LatestLedgerCloseTime: 1_700_000_505, OldestLedger: 11,
		TransactionDetails: protocol.TransactionDetails{Status: "FAILED", Ledger: 88, ResultXDR: failed, TransactionHash: inner}}
	lk, err = e.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner})
	if err != nil || lk.Status != transfer.LookupFailed || lk.Hash != inner || lk.Ledger != 88 || lk.FeeChargedStroops != 100 ||
		!slices.Equal(lk.ResultCodes, []string{"tx_failed", "op_underfunded"}) || lk.LatestLedger != 91 || lk.OldestLedger != 11 {
		t.Errorf("failed: %+v, %v", lk, err)
	}

	// Found only by the outer (fee-bump) hash.
	delete(byHash, inner)
	byHash[outer] = protocol.GetTransactionResponse{LatestLedger: 92, OldestLedger: 12,
		TransactionDetails: protocol.TransactionDetails{Status: "SUCCESS", Ledger: 89, ResultXDR: success, FeeBump: true}}
	lk, err = e.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner, OuterHash: outer})
	if err != nil || lk.Status != transfer.LookupSuccess || lk.Hash != outer || lk.Ledger != 89 || lk.FeeChargedStroops != 400 || lk.ResultCodes != nil {
		t.Errorf("outer: %+v, %v", lk, err)
	}

	// Neither found: the ledger read before, and the later oldest one (the conservative pair).
	delete(byHash, outer)
	n := 0
	e.fake.handle("getTransaction", func(json.RawMessage) (any, *rpcError) {
		n++
		return protocol.GetTransactionResponse{LatestLedger: uint32(90 + n), LatestLedgerCloseTime: int64(1_700_000_500 + n), OldestLedger: uint32(10 + n),
			TransactionDetails: protocol.TransactionDetails{Status: "NOT_FOUND"}}, nil
	})
	lk, err = e.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner, OuterHash: outer})
	if err != nil || lk.Status != transfer.LookupNotFound || lk.LatestLedger != 85 || lk.OldestLedger != 12 ||
		!lk.LatestLedgerCloseTime.Equal(time.Unix(1_700_000_400, 0)) {
		t.Errorf("neither: %+v, %v", lk, err)
	}

	// Transport failures and unknown answers are errors.
	e.fake.answer("getTransaction", protocol.GetTransactionResponse{TransactionDetails: protocol.TransactionDetails{Status: "MAYBE"}})
	if _, err := e.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner}); err == nil {
		t.Error("unknown status accepted")
	}
	bad := newUnitEnv(t, func(c *RPCConfig) { c.URL = closedURL(t) })
	if _, err := bad.ledger.Lookup(ctx, transfer.Envelope{InnerHash: inner}); err == nil {
		t.Error("unreachable lookup succeeded")
	}
}

func TestCheckNetwork(t *testing.T) {
	e := newUnitEnv(t)
	e.fake.answer("getNetwork", protocol.GetNetworkResponse{Passphrase: testPassphrase})
	e.fake.answer("getVersionInfo", protocol.GetVersionInfoResponse{Version: "25.1.1", ProtocolVersion: 25})
	if err := e.ledger.CheckNetwork(context.Background()); err != nil {
		t.Error(err)
	}
	e.fake.answer("getNetwork", protocol.GetNetworkResponse{Passphrase: network.PublicNetworkPassphrase})
	if err := e.ledger.CheckNetwork(context.Background()); err == nil {
		t.Error("wrong network accepted")
	}
}

// TestPrepareEnvelopeIsUniqueToItsClaim (adversary finding 1): two claims with equal requests,
// built in the same second from the same source account and sequence number, must not sign one
// and the same envelope: each carries its claim's minTime (transfer.ClaimMinTime), so only one can
// apply and the other is refused and rebuilt, never counted as paid by the first.
func TestPrepareEnvelopeIsUniqueToItsClaim(t *testing.T) {
	e := newUnitEnv(t)
	wallet := keypair.MustRandom().Address()
	maxTime := time.Unix(1_700_000_060, 0)
	var hashes []string
	for _, claim := range []string{"claim-of-key-a", "claim-of-key-b"} {
		terms := transfer.Terms{MaxTime: maxTime, MinTime: transfer.ClaimMinTime(claim)}
		env, err := e.ledger.Prepare(context.Background(), withdraw(wallet, 10_005_000_000), terms)
		if err != nil {
			t.Fatal(err)
		}
		gtx, err := txnbuild.TransactionFromXDR(env.XDR)
		if err != nil {
			t.Fatal(err)
		}
		tx, _ := gtx.Transaction()
		if tb := tx.Timebounds(); tb.MinTime != terms.MinTime.Unix() || tb.MaxTime != maxTime.Unix() || tx.SequenceNumber() != 42 {
			t.Errorf("%s: timebounds %+v, sequence %d", claim, tb, tx.SequenceNumber())
		}
		hashes = append(hashes, env.InnerHash)
	}
	if hashes[0] == hashes[1] {
		t.Fatalf("two claims signed the same envelope %s", hashes[0])
	}
}
