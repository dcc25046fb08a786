package stellar

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
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
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// Exactly the money asked for: every envelope checked against its request. The tables build envelopes for
// many requests in every mode (a classic payment from the vault or from a channel account in a
// fee bump, on Stellar RPC and on Horizon; a vault-contract call, with and without channels, at
// several decimals), decode the signed XDR with go-stellar-sdk's xdr package, and check asset
// (code and issuer, or the asset's contract), amount (stroops, or the i128 in the contract's
// unit), destination, source, sequence number, signatures and timebounds field by field.

// openedEnvelope is a signed envelope taken apart.
type openedEnvelope struct {
	tx        xdr.Transaction
	innerSigs []xdr.DecoratedSignature
	innerHash [32]byte
	feeBump   *xdr.FeeBumpTransaction
	outerSigs []xdr.DecoratedSignature
	outerHash [32]byte
}

func openEnvelope(t *testing.T, b64, passphrase string) openedEnvelope {
	t.Helper()
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64, &env); err != nil {
		t.Fatalf("decoding the envelope: %v", err)
	}
	var o openedEnvelope
	inner := env
	switch env.Type {
	case xdr.EnvelopeTypeEnvelopeTypeTx:
	case xdr.EnvelopeTypeEnvelopeTypeTxFeeBump:
		fb := env.FeeBump.Tx
		o.feeBump, o.outerSigs = &fb, env.FeeBump.Signatures
		h, err := network.HashFeeBumpTransaction(fb, passphrase)
		if err != nil {
			t.Fatal(err)
		}
		o.outerHash = h
		if fb.InnerTx.Type != xdr.EnvelopeTypeEnvelopeTypeTx {
			t.Fatalf("fee bump wraps a %s", fb.InnerTx.Type)
		}
		inner = xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: fb.InnerTx.V1}
	default:
		t.Fatalf("envelope type %s", env.Type)
	}
	o.tx, o.innerSigs = inner.V1.Tx, inner.V1.Signatures
	h, err := network.HashTransaction(o.tx, passphrase)
	if err != nil {
		t.Fatal(err)
	}
	o.innerHash = h
	return o
}

// ed25519Of is the account key a muxed account names (it must not be an M... id).
func ed25519Of(t *testing.T, m xdr.MuxedAccount) string {
	t.Helper()
	if m.Type != xdr.CryptoKeyTypeKeyTypeEd25519 || m.Ed25519 == nil {
		t.Fatalf("muxed account of type %s", m.Type)
	}
	return strkey.MustEncode(strkey.VersionByteAccountID, m.Ed25519[:])
}

// signedBy reports whether one of sigs is account's signature of hash.
func signedBy(account string, hash [32]byte, sigs []xdr.DecoratedSignature) bool {
	kp := keypair.MustParseAddress(account)
	for _, s := range sigs {
		if kp.Verify(hash[:], s.Signature) == nil {
			return true
		}
	}
	return false
}

// checkSources checks what every envelope must say about its source: the transaction source is
// env.Channel (the vault without channels; a channel account, fee-bumped by the fee account, with
// channels), its sequence number is the one after seq, it is signed by the source (and by the
// vault, the operation source, in a channel's transaction), the timebounds are {0, maxTime}, and
// the hashes are the envelope's.
func checkSources(t *testing.T, env transfer.Envelope, o openedEnvelope, vault string, fee *keypair.Full, seq int64, maxTime time.Time) {
	t.Helper()
	src := ed25519Of(t, o.tx.SourceAccount)
	if src != env.Channel {
		t.Errorf("transaction source %s, envelope says %s", src, env.Channel)
	}
	if int64(o.tx.SeqNum) != seq+1 {
		t.Errorf("sequence number %d, want %d (the source's next)", o.tx.SeqNum, seq+1)
	}
	if !signedBy(src, o.innerHash, o.innerSigs) || !signedBy(vault, o.innerHash, o.innerSigs) {
		t.Errorf("transaction not signed by its source %s and the vault", src)
	}
	if o.tx.Cond.Type != xdr.PreconditionTypePrecondTime || o.tx.Cond.TimeBounds == nil ||
		o.tx.Cond.TimeBounds.MinTime != 0 || int64(o.tx.Cond.TimeBounds.MaxTime) != maxTime.Unix() || env.MaxTime != maxTime.Unix() {
		t.Errorf("timebounds %+v (envelope maxTime %d), want {0, %d}", o.tx.Cond, env.MaxTime, maxTime.Unix())
	}
	if env.InnerHash != hex.EncodeToString(o.innerHash[:]) {
		t.Errorf("InnerHash %s is not the transaction's hash", env.InnerHash)
	}
	if fee == nil {
		if o.feeBump != nil || env.OuterHash != "" || src != vault {
			t.Errorf("without channels: fee bump %v, outer hash %q, source %s", o.feeBump != nil, env.OuterHash, src)
		}
		if env.FeeStroops != int64(o.tx.Fee) {
			t.Errorf("FeeStroops %d, transaction fee %d", env.FeeStroops, o.tx.Fee)
		}
		return
	}
	if o.feeBump == nil {
		t.Fatal("with channels the envelope must be a fee bump")
	}
	if src == vault {
		t.Error("with channels the source must be a channel account, not the vault")
	}
	if got := ed25519Of(t, o.feeBump.FeeSource); got != fee.Address() || !signedBy(fee.Address(), o.outerHash, o.outerSigs) {
		t.Errorf("fee bump paid by %s (signed: %v), want the fee account %s", got, signedBy(fee.Address(), o.outerHash, o.outerSigs), fee.Address())
	}
	if env.OuterHash != hex.EncodeToString(o.outerHash[:]) || env.FeeStroops != int64(o.feeBump.Fee) {
		t.Errorf("OuterHash %s / FeeStroops %d do not match the fee bump (fee %d)", env.OuterHash, env.FeeStroops, o.feeBump.Fee)
	}
}

// onlyOperation returns the transaction's one operation and its source (the vault).
func onlyOperation(t *testing.T, o openedEnvelope, vault string) xdr.Operation {
	t.Helper()
	if len(o.tx.Operations) != 1 {
		t.Fatalf("%d operations, want 1", len(o.tx.Operations))
	}
	op := o.tx.Operations[0]
	opSource := ed25519Of(t, o.tx.SourceAccount)
	if op.SourceAccount != nil {
		opSource = ed25519Of(t, *op.SourceAccount)
	}
	if opSource != vault {
		t.Errorf("operation source %s, want the vault %s", opSource, vault)
	}
	return op
}

// codeBytes is an asset code as the XDR holds it: padded with zero bytes to 4 or 12.
func codeBytes(code string) []byte {
	n := 4
	if len(code) > 4 {
		n = 12
	}
	return append([]byte(code), make([]byte, n-len(code))...)
}

// want is what a payment's envelope must say beyond its source: where it goes (the G... account
// credited and, for an M... wallet, the muxed id), the asset, the amount and the memo, each
// derived from the request apart from the code under test.
type want struct {
	account string
	muxed   bool
	id      uint64
	asset   txnbuild.CreditAsset
	stroops int64
	memo    xdr.Memo
}

// wantOf is what req's envelope must say: the wallet taken apart with go-stellar-sdk's xdr (not
// the service's decoder) and the memo built from the request's text with xdr.NewMemo.
func wantOf(t *testing.T, req transfer.Request, asset txnbuild.CreditAsset) want {
	t.Helper()
	ma, err := xdr.AddressToMuxedAccount(req.WalletAddress)
	if err != nil {
		t.Fatalf("wallet %s: %v", req.WalletAddress, err)
	}
	w := want{account: ma.ToAccountId().Address(), asset: asset, stroops: req.Stroops, memo: xdr.Memo{Type: xdr.MemoTypeMemoNone}}
	if id, err := ma.GetId(); err == nil {
		w.muxed, w.id = true, id
	}
	switch req.Memo.Type {
	case transfer.MemoText:
		w.memo, err = xdr.NewMemo(xdr.MemoTypeMemoText, req.Memo.Value)
	case transfer.MemoID:
		var id uint64
		if id, err = strconv.ParseUint(req.Memo.Value, 10, 64); err == nil {
			w.memo, err = xdr.NewMemo(xdr.MemoTypeMemoId, xdr.Uint64(id))
		}
	case transfer.MemoHash, transfer.MemoReturn:
		var raw []byte
		if raw, err = hex.DecodeString(req.Memo.Value); err == nil && len(raw) == 32 {
			var h xdr.Hash
			copy(h[:], raw)
			typ := map[transfer.MemoType]xdr.MemoType{transfer.MemoHash: xdr.MemoTypeMemoHash, transfer.MemoReturn: xdr.MemoTypeMemoReturn}[req.Memo.Type]
			w.memo, err = xdr.NewMemo(typ, h)
		}
	}
	if err != nil {
		t.Fatalf("memo %+v: %v", req.Memo, err)
	}
	return w
}

// paymentMismatches lists how a transaction's payment operation and memo differ from w: its
// destination (the muxed account's type, key and id, or the account's key), amount, asset (code
// byte for byte, issuer) and memo (type and value, compared as XDR bytes). Empty: it pays exactly
// what was asked, where it was asked, with the memo asked.
func paymentMismatches(op xdr.Operation, memo xdr.Memo, w want) []string {
	var out []string
	pay, ok := op.Body.GetPaymentOp()
	if !ok {
		return []string{fmt.Sprintf("operation %s, want a payment", op.Body.Type)}
	}
	var raw [32]byte
	copy(raw[:], strkey.MustDecode(strkey.VersionByteAccountID, w.account))
	switch d := pay.Destination; {
	case w.muxed:
		m, ok := d.GetMed25519()
		if d.Type != xdr.CryptoKeyTypeKeyTypeMuxedEd25519 || !ok {
			out = append(out, fmt.Sprintf("destination of type %s, want a muxed account", d.Type))
			break
		}
		if [32]byte(m.Ed25519) != raw {
			out = append(out, fmt.Sprintf("muxed destination's account %s, want %s", d.ToAccountId().Address(), w.account))
		}
		if uint64(m.Id) != w.id {
			out = append(out, fmt.Sprintf("muxed destination's id %d, want %d", m.Id, w.id))
		}
	default:
		ed, ok := d.GetEd25519()
		if d.Type != xdr.CryptoKeyTypeKeyTypeEd25519 || !ok {
			out = append(out, fmt.Sprintf("destination of type %s, want a G... account", d.Type))
			break
		}
		if [32]byte(ed) != raw {
			out = append(out, fmt.Sprintf("destination %s, want %s", d.ToAccountId().Address(), w.account))
		}
	}
	if int64(pay.Amount) != w.stroops {
		out = append(out, fmt.Sprintf("amount %d stroops, want %d", pay.Amount, w.stroops))
	}
	var code []byte
	var issuer xdr.AccountId
	switch pay.Asset.Type {
	case xdr.AssetTypeAssetTypeCreditAlphanum4:
		code, issuer = pay.Asset.AlphaNum4.AssetCode[:], pay.Asset.AlphaNum4.Issuer
	case xdr.AssetTypeAssetTypeCreditAlphanum12:
		code, issuer = pay.Asset.AlphaNum12.AssetCode[:], pay.Asset.AlphaNum12.Issuer
	default:
		return append(out, fmt.Sprintf("asset type %s", pay.Asset.Type))
	}
	if !bytes.Equal(code, codeBytes(w.asset.Code)) {
		out = append(out, fmt.Sprintf("asset code %q (%s), want %q exactly", code, pay.Asset.Type, w.asset.Code))
	}
	if issuer.Address() != w.asset.Issuer {
		out = append(out, fmt.Sprintf("asset issuer %s, want %s", issuer.Address(), w.asset.Issuer))
	}
	got, err1 := memo.MarshalBinary()
	exp, err2 := w.memo.MarshalBinary()
	if err1 != nil || err2 != nil || !bytes.Equal(got, exp) {
		out = append(out, fmt.Sprintf("memo %s %v, want %s %v", memo.Type, memoValue(memo), w.memo.Type, memoValue(w.memo)))
	}
	return out
}

// memoValue is a memo's value for a message.
func memoValue(m xdr.Memo) any {
	switch m.Type {
	case xdr.MemoTypeMemoText:
		return *m.Text
	case xdr.MemoTypeMemoId:
		return uint64(*m.Id)
	case xdr.MemoTypeMemoHash:
		return hex.EncodeToString(m.Hash[:])
	case xdr.MemoTypeMemoReturn:
		return hex.EncodeToString(m.RetHash[:])
	}
	return nil
}

// checkPayment checks a payment operation and its transaction's memo against w.
func checkPayment(t *testing.T, op xdr.Operation, memo xdr.Memo, w want) {
	t.Helper()
	for _, m := range paymentMismatches(op, memo, w) {
		t.Error(m)
	}
}

// envelopeAssets are codes of 1 to 4 and 5 to 12 characters in mixed case, each with its own
// issuer; no two differ only by case.
func envelopeAssets() []txnbuild.CreditAsset {
	var out []txnbuild.CreditAsset
	for _, code := range []string{"A", "eUR", "USDC", "yUSDC", "x1y2Z3", "ABCDEFGHIJKL", "abcdefghijk"} {
		out = append(out, txnbuild.CreditAsset{Code: code, Issuer: keypair.MustRandom().Address()})
	}
	return out
}

// spellings are the ways a request may name code: as configured, upper and lower case.
func spellings(code string) []string {
	return []string{code, strings.ToUpper(code), strings.ToLower(code)}
}

// muxedOf is the M... address of account with id, as go-stellar-sdk's xdr writes it (SEP-23).
func muxedOf(t *testing.T, account string, id uint64) string {
	t.Helper()
	m, err := xdr.MuxedAccountFromAccountId(account, id)
	if err != nil {
		t.Fatal(err)
	}
	return m.Address()
}

// paying is req with wallet as its destination: for an M... address, its account and id as
// transfer.Rules sets them (read here with go-stellar-sdk's xdr, not the service's decoder).
func paying(t *testing.T, req transfer.Request, wallet string) transfer.Request {
	t.Helper()
	req.WalletAddress, req.Account, req.MuxedID = wallet, "", 0
	if wallet[0] == 'M' {
		ma, err := xdr.AddressToMuxedAccount(wallet)
		if err != nil {
			t.Fatal(err)
		}
		req.Account = ma.ToAccountId().Address()
		req.MuxedID, _ = ma.GetId()
	}
	return req
}

// envelopeMemos are memos of every type at their bounds: none, text of 0 and of exactly 28 bytes
// (14 two-byte characters), ids 0 and 2^64-1, a hash and a return of 32 bytes.
func envelopeMemos() []transfer.Memo {
	h := sha256.Sum256([]byte("a payout"))
	return []transfer.Memo{{}, {Type: transfer.MemoText, Value: "exchange-customer-0042"}, {Type: transfer.MemoID, Value: "18446744073709551615"},
		{Type: transfer.MemoHash, Value: hex.EncodeToString(h[:])}, {Type: transfer.MemoText, Value: strings.Repeat("é", 14)},
		{Type: transfer.MemoReturn, Value: hex.EncodeToString(h[:])}, {Type: transfer.MemoID, Value: "0"}, {Type: transfer.MemoText, Value: ""}}
}

// envelopeMuxedIDs are the ids of the M... rows: 0, 1, 2^63 and 2^64-1.
var envelopeMuxedIDs = []uint64{0, 1, 1 << 63, math.MaxUint64}

func TestEnvelopesMatchTheirPaymentRequests(t *testing.T) {
	assets := envelopeAssets()
	memos := envelopeMemos()
	amounts := []int64{1, 25*unit + 5, 1_000_000 * unit, math.MaxInt64}
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{assets: assets})
		ctx := context.Background()
		var fee *keypair.Full
		if e.channels > 0 {
			fee = e.keys.Fee
		}
		n := 0
		for i, a := range assets {
			for j, spelled := range spellings(a.Code) {
				// Every other row pays an M... address of a new account, with the ids in turn.
				wallet := keypair.MustRandom().Address()
				if n%2 == 1 {
					wallet = muxedOf(t, wallet, envelopeMuxedIDs[(n/2)%len(envelopeMuxedIDs)])
				}
				stroops := amounts[(i+j)%len(amounts)]
				memo := memos[(n/2)%len(memos)]
				t.Run(fmt.Sprintf("%s/%s/%d/memo=%s", spelled, wallet[:4], stroops, memo.Type), func(t *testing.T) {
					req := transfer.Request{OperationType: transfer.Withdraw, Asset: spelled, Amount: "x", Stroops: stroops, Memo: memo}
					req = paying(t, req, wallet)
					maxTime := e.clock.Now().Add(time.Duration(30+n) * time.Second)
					env, err := e.ledger.Prepare(ctx, req, transfer.Terms{MaxTime: maxTime})
					if err != nil {
						t.Fatal(err)
					}
					defer e.ledger.Done(ctx, env)
					source, ok := e.net.Account(env.Channel)
					if !ok {
						t.Fatalf("source %s is not on the network", env.Channel)
					}
					o := openEnvelope(t, env.XDR, e.net.Passphrase())
					checkSources(t, env, o, e.vault, fee, source.Sequence, maxTime)
					checkPayment(t, onlyOperation(t, o, e.vault), o.tx.Memo, wantOf(t, req, a))
				})
				n++
			}
		}
	})
}

// contractEnv is a contract ledger over a scripted RPC that simulates every call alike.
type contractEnv struct {
	fake        *fakeRPC
	keys        signing.Keys
	ledger      *ContractLedger
	contracts   map[string]string // asset code as configured -> C...
	resourceFee int64
}

func newContractEnv(t *testing.T, channels bool, decimals int, assets []txnbuild.CreditAsset) *contractEnv {
	t.Helper()
	fake, srv := newFakeRPC(t)
	keys := sourcestest.Keys(t)
	e := &contractEnv{fake: fake, keys: keys, contracts: map[string]string{}, resourceFee: 54_321}
	for _, a := range assets {
		e.contracts[a.Code] = randomContract()
	}
	cfg := RPCConfig{URL: srv.URL, Passphrase: testPassphrase, VaultAccount: keys.Vault.Address(), Assets: assets,
		Keys: signing.StaticKeys{K: keys}, MaxFeeStroops: 1_000_000, Clock: vclock.New(time.Unix(1_700_000_000, 0))}
	if channels {
		pool, err := sources.NewChannelPool(sources.ChannelPoolConfig{Leases: &sourcestest.Leases{}, Count: 2, Clock: cfg.Clock})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Channels = pool
	}
	inner, err := NewRPCLedger(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if e.ledger, err = NewContractLedger(inner, ContractConfig{Contracts: e.contracts, Decimals: decimals}); err != nil {
		t.Fatal(err)
	}
	// Every account (the vault, a channel) is at sequence number 41.
	answerEntries(t, fake, 41)
	fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerCloseTime: 1_700_000_000})
	data, err := xdr.MarshalBase64(xdr.SorobanTransactionData{ResourceFee: xdr.Int64(e.resourceFee),
		Resources: xdr.SorobanResources{Instructions: 1000, Footprint: xdr.LedgerFootprint{ReadOnly: []xdr.LedgerKey{}, ReadWrite: []xdr.LedgerKey{}}}})
	if err != nil {
		t.Fatal(err)
	}
	fake.answer("simulateTransaction", protocol.SimulateTransactionResponse{TransactionDataXDR: data, MinResourceFee: e.resourceFee,
		Results: []protocol.SimulateHostFunctionResult{{AuthXDR: &[]string{}}}, LatestLedger: 77})
	return e
}

// randomContract is a C... address with a random contract ID.
func randomContract() string {
	id := make([]byte, 32)
	_, _ = rand.Read(id)
	return strkey.MustEncode(strkey.VersionByteContract, id)
}

// contractUnits is stroops in a contract counting decimals places, computed apart from the code
// under test.
func contractUnits(stroops int64, decimals int) *big.Int {
	v := big.NewInt(stroops)
	if decimals >= 7 {
		return v.Mul(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(decimals-7)), nil))
	}
	return v.Quo(v, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(7-decimals)), nil))
}

// fromInt128 is the value of an XDR i128.
func fromInt128(p xdr.Int128Parts) *big.Int {
	v := big.NewInt(int64(p.Hi))
	v.Lsh(v, 64)
	return v.Add(v, new(big.Int).SetUint64(uint64(p.Lo)))
}

// checkCall checks a contract call against its request.
func checkCall(t *testing.T, op xdr.Operation, contract, fn, wallet string, amount *big.Int) {
	t.Helper()
	ih, ok := op.Body.GetInvokeHostFunctionOp()
	if !ok || ih.HostFunction.Type != xdr.HostFunctionTypeHostFunctionTypeInvokeContract {
		t.Fatalf("operation %s, want a contract call", op.Body.Type)
	}
	call := ih.HostFunction.InvokeContract
	if got, err := call.ContractAddress.String(); err != nil || got != contract {
		t.Errorf("contract %s, want the asset's %s", got, contract)
	}
	if string(call.FunctionName) != fn {
		t.Errorf("function %s, want %s", call.FunctionName, fn)
	}
	if len(call.Args) != 2 || call.Args[0].Address == nil || call.Args[1].I128 == nil {
		t.Fatalf("arguments %+v, want (Address, i128)", call.Args)
	}
	if got, err := call.Args[0].Address.String(); err != nil || got != wallet {
		t.Errorf("wallet argument %s, want %s", got, wallet)
	}
	if got := fromInt128(*call.Args[1].I128); got.Cmp(amount) != 0 {
		t.Errorf("amount argument %s, want %s", got, amount)
	}
}

func TestEnvelopesMatchTheirContractRequests(t *testing.T) {
	assets := []txnbuild.CreditAsset{{Code: "yUSDC", Issuer: keypair.MustRandom().Address()},
		{Code: "EURC", Issuer: keypair.MustRandom().Address()}, {Code: "aBcDeFgHiJkL", Issuer: keypair.MustRandom().Address()}}
	for _, channels := range []bool{false, true} {
		for _, decimals := range []int{7, 2, 18} {
			t.Run(fmt.Sprintf("channels=%v/decimals=%d", channels, decimals), func(t *testing.T) {
				e := newContractEnv(t, channels, decimals, assets)
				var fee *keypair.Full
				if channels {
					fee = e.keys.Fee
				}
				ctx := context.Background()
				amounts := []int64{100_000, 25 * unit, 1_000_000 * unit, math.MaxInt64 / 100_000 * 100_000}
				wallets := []string{keypair.MustRandom().Address(), strkey.MustEncode(strkey.VersionByteContract, bytes.Repeat([]byte{7}, 32))}
				n := 0
				for _, a := range assets {
					for _, spelled := range spellings(a.Code) {
						for _, op := range []transfer.Operation{transfer.Deposit, transfer.Withdraw} {
							wallet := wallets[n%len(wallets)]
							stroops := amounts[n%len(amounts)]
							maxTime := time.Unix(1_700_000_060+int64(n), 0)
							n++
							t.Run(fmt.Sprintf("%s/%s/%s/%d", op, spelled, wallet[:1], stroops), func(t *testing.T) {
								req := transfer.Request{OperationType: op, WalletAddress: wallet, Asset: spelled, Amount: "x", Stroops: stroops}
								env, err := e.ledger.Prepare(ctx, req, transfer.Terms{MaxTime: maxTime})
								if err != nil {
									t.Fatal(err)
								}
								defer e.ledger.Done(ctx, env)
								o := openEnvelope(t, env.XDR, testPassphrase)
								checkSources(t, env, o, e.keys.Vault.Address(), fee, 41, maxTime)
								fn := map[transfer.Operation]string{transfer.Deposit: "deposit", transfer.Withdraw: "withdraw"}[op]
								checkCall(t, onlyOperation(t, o, e.keys.Vault.Address()), e.contracts[a.Code], fn, wallet, contractUnits(stroops, decimals))
								if o.tx.Ext.V != 1 || o.tx.Ext.SorobanData == nil || int64(o.tx.Ext.SorobanData.ResourceFee) != e.resourceFee {
									t.Errorf("Soroban data %+v, want the simulation's (resource fee %d)", o.tx.Ext, e.resourceFee)
								}
								if o.tx.Memo.Type != xdr.MemoTypeMemoNone {
									t.Errorf("a contract call with memo %s", o.tx.Memo.Type)
								}
							})
						}
					}
				}
				// What a contract call cannot carry (ContractLedger.validate): a memo of any type,
				// and an M... wallet, with or without a memo, for either operation. Each is refused
				// as the client's mistake before anything is simulated, signed or sent.
				var refused []transfer.Request
				for i, memo := range envelopeMemos()[1:] {
					op := []transfer.Operation{transfer.Deposit, transfer.Withdraw}[i%2]
					refused = append(refused, transfer.Request{OperationType: op, WalletAddress: wallets[i%len(wallets)], Asset: "yUSDC", Amount: "x", Stroops: unit, Memo: memo})
				}
				for i, id := range envelopeMuxedIDs {
					req := transfer.Request{OperationType: []transfer.Operation{transfer.Deposit, transfer.Withdraw}[i%2], Asset: "EURC", Amount: "x", Stroops: unit}
					if i == 3 {
						req.Memo = transfer.Memo{Type: transfer.MemoID, Value: "7"}
					}
					refused = append(refused, paying(t, req, muxedOf(t, keypair.MustRandom().Address(), id)))
				}
				for _, req := range refused {
					t.Run(fmt.Sprintf("refused/%s/%s/memo=%s", req.OperationType, req.WalletAddress[:1], req.Memo.Type), func(t *testing.T) {
						calls := len(e.fake.methods())
						env, err := e.ledger.Prepare(ctx, req, transfer.Terms{MaxTime: time.Unix(1_700_000_060, 0)})
						var v *transfer.ValidationError
						if !errors.As(err, &v) || v.Code != transfer.CodeMemoNotSupported || v.Kind != transfer.KindUnacceptable || env.XDR != "" {
							t.Fatalf("Prepare = %+v, %v; want MEMO_NOT_SUPPORTED (unacceptable) and no envelope", env, err)
						}
						if got := e.fake.methods()[calls:]; len(got) != 0 {
							t.Errorf("the refusal called %v", got)
						}
					})
				}
			})
		}
	}
}

// An adversary's envelopes: the table's check (paymentMismatches) refuses a payment whose memo or
// muxed destination is not its request's, however little it differs. One envelope is built for a
// muxed wallet with an id memo and passes; each variant changes one thing in its decoded
// transaction and must be refused.
func TestEnvelopeCheckRefusesAnotherMemoOrDestination(t *testing.T) {
	e := newSuiteEnv(t, "rpc", suiteOpts{})
	account := keypair.MustRandom().Address()
	req := paying(t, transfer.Request{OperationType: transfer.Withdraw, Asset: "USDC", Amount: "x", Stroops: 5 * unit,
		Memo: transfer.Memo{Type: transfer.MemoID, Value: "7"}}, muxedOf(t, account, 42))
	env, err := e.ledger.Prepare(context.Background(), req, transfer.Terms{MaxTime: e.clock.Now().Add(30 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.ledger.Done(context.Background(), env)
	usdc := txnbuild.CreditAsset{Code: e.usdc.Code, Issuer: e.usdc.Issuer}
	w := wantOf(t, req, usdc)
	built := openEnvelope(t, env.XDR, e.net.Passphrase())
	if m := paymentMismatches(onlyOperation(t, built, e.vault), built.tx.Memo, w); len(m) != 0 {
		t.Fatalf("the envelope as built: %v", m)
	}
	other := keypair.MustRandom().Address()
	text := "7"
	h := xdr.Hash{7}
	for name, tamper := range map[string]func(tx *xdr.Transaction){
		"memo id 8":   func(tx *xdr.Transaction) { id := xdr.Uint64(8); tx.Memo.Id = &id },
		"no memo":     func(tx *xdr.Transaction) { tx.Memo = xdr.Memo{Type: xdr.MemoTypeMemoNone} },
		"memo text 7": func(tx *xdr.Transaction) { tx.Memo = xdr.Memo{Type: xdr.MemoTypeMemoText, Text: &text} },
		"memo hash":   func(tx *xdr.Transaction) { tx.Memo = xdr.Memo{Type: xdr.MemoTypeMemoHash, Hash: &h} },
		"muxed id 43": func(tx *xdr.Transaction) { tx.Operations[0].Body.PaymentOp.Destination.Med25519.Id = 43 },
		"muxed id 0":  func(tx *xdr.Transaction) { tx.Operations[0].Body.PaymentOp.Destination.Med25519.Id = 0 },
		"the account, not muxed": func(tx *xdr.Transaction) {
			d := &tx.Operations[0].Body.PaymentOp.Destination
			aid := d.ToAccountId()
			*d = aid.ToMuxedAccount()
		},
		"another account, id 42": func(tx *xdr.Transaction) {
			m := muxedAccountOf(t, other, 42)
			tx.Operations[0].Body.PaymentOp.Destination = m
		},
		"another amount": func(tx *xdr.Transaction) { tx.Operations[0].Body.PaymentOp.Amount++ },
	} {
		t.Run(name, func(t *testing.T) {
			o := openEnvelope(t, env.XDR, e.net.Passphrase())
			tamper(&o.tx)
			if m := paymentMismatches(o.tx.Operations[0], o.tx.Memo, w); len(m) == 0 {
				t.Errorf("%s: the check let it pass", name)
			}
		})
	}
}

// muxedAccountOf is account's muxed account with id, as XDR.
func muxedAccountOf(t *testing.T, account string, id uint64) xdr.MuxedAccount {
	t.Helper()
	m, err := xdr.MuxedAccountFromAccountId(account, id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A request not made by transfer.Rules cannot pay elsewhere than its address says, nor carry a
// memo the network would read otherwise: Prepare refuses, before any source is leased, an M...
// address whose account or id disagree with the request's, a muxed account or id without an M...
// address, an M... of one of the service's own accounts, and a memo that is not canonical.
func TestPrepareRefusesWhatItCannotPayExactly(t *testing.T) {
	e := newSuiteEnv(t, "rpc", suiteOpts{channels: 2})
	chans, err := e.ledger.EnsureChannels(context.Background())
	if err != nil || len(chans) == 0 {
		t.Fatalf("channels %v, %v", chans, err)
	}
	before := len(e.leases.Granted())
	someone := keypair.MustRandom().Address()
	base := transfer.Request{OperationType: transfer.Withdraw, Asset: "USDC", Amount: "x", Stroops: unit}
	muxed := paying(t, base, muxedOf(t, someone, 42))
	withAccount := func(r transfer.Request, a string) transfer.Request { r.Account = a; return r }
	withID := func(r transfer.Request, id uint64) transfer.Request { r.MuxedID = id; return r }
	withMemo := func(m transfer.Memo) transfer.Request { r := paying(t, base, someone); r.Memo = m; return r }
	cases := []struct {
		name string
		req  transfer.Request
		code string
	}{
		{"M... with another account", withAccount(muxed, keypair.MustRandom().Address()), transfer.CodeInvalidAddress},
		{"M... with another id", withID(muxed, 43), transfer.CodeInvalidAddress},
		{"M... without its account", withAccount(muxed, ""), transfer.CodeInvalidAddress},
		{"G... with an account", withAccount(paying(t, base, someone), someone), transfer.CodeInvalidAddress},
		{"G... with an id", withID(paying(t, base, someone), 1), transfer.CodeInvalidAddress},
		{"M... of the vault", paying(t, base, muxedOf(t, e.vault, 1)), transfer.CodeInvalidAddress},
		{"M... of the issuer", paying(t, base, muxedOf(t, e.usdc.Issuer, 1)), transfer.CodeInvalidAddress},
		{"M... of the fee account", paying(t, base, muxedOf(t, e.keys.Fee.Address(), 1)), transfer.CodeInvalidAddress},
		{"M... of a channel", paying(t, base, muxedOf(t, chans[0].Account, 1)), transfer.CodeInvalidAddress},
		{"M... with a bad checksum", func() transfer.Request { r := muxed; r.WalletAddress = flipMiddle(r.WalletAddress); return r }(), transfer.CodeInvalidAddress},
		{"text of 29 bytes", withMemo(transfer.Memo{Type: transfer.MemoText, Value: strings.Repeat("x", 29)}), transfer.CodeInvalidMemo},
		{"text of 15 two-byte characters", withMemo(transfer.Memo{Type: transfer.MemoText, Value: strings.Repeat("é", 15)}), transfer.CodeInvalidMemo},
		{"id with a leading zero", withMemo(transfer.Memo{Type: transfer.MemoID, Value: "07"}), transfer.CodeInvalidMemo},
		{"id of 2^64", withMemo(transfer.Memo{Type: transfer.MemoID, Value: "18446744073709551616"}), transfer.CodeInvalidMemo},
		{"id with a sign", withMemo(transfer.Memo{Type: transfer.MemoID, Value: "+7"}), transfer.CodeInvalidMemo},
		{"hash in upper case", withMemo(transfer.Memo{Type: transfer.MemoHash, Value: strings.Repeat("AB", 32)}), transfer.CodeInvalidMemo},
		{"hash of 31 bytes", withMemo(transfer.Memo{Type: transfer.MemoHash, Value: strings.Repeat("ab", 31)}), transfer.CodeInvalidMemo},
		{"return of 33 bytes", withMemo(transfer.Memo{Type: transfer.MemoReturn, Value: strings.Repeat("ab", 33)}), transfer.CodeInvalidMemo},
		{"type in upper case", withMemo(transfer.Memo{Type: "TEXT", Value: "x"}), transfer.CodeInvalidMemo},
		{"a value without a type", withMemo(transfer.Memo{Value: "x"}), transfer.CodeInvalidMemo},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env, err := e.ledger.Prepare(context.Background(), tc.req, transfer.Terms{MaxTime: e.clock.Now().Add(30 * time.Second)})
			var v *transfer.ValidationError
			if !errors.As(err, &v) || v.Code != tc.code || v.Kind != transfer.KindUnacceptable || env.XDR != "" {
				t.Fatalf("Prepare = %+v, %v; want %s (unacceptable) and no envelope", env, err, tc.code)
			}
		})
	}
	if granted := e.leases.Granted(); len(granted) != before {
		t.Errorf("channel leases granted to refused requests: %v", granted[before:])
	}
}

// flipMiddle is s with its 31st character changed: a strkey whose checksum no longer holds.
func flipMiddle(s string) string {
	c := "A"
	if s[30] == 'A' {
		c = "B"
	}
	return s[:30] + c + s[31:]
}
