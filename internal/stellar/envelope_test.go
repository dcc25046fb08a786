package stellar

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
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

// checkPayment checks a payment operation against its request.
func checkPayment(t *testing.T, op xdr.Operation, wallet string, asset txnbuild.CreditAsset, stroops int64) {
	t.Helper()
	pay, ok := op.Body.GetPaymentOp()
	if !ok {
		t.Fatalf("operation %s, want a payment", op.Body.Type)
	}
	if got := ed25519Of(t, pay.Destination); got != wallet {
		t.Errorf("destination %s, want %s", got, wallet)
	}
	if int64(pay.Amount) != stroops {
		t.Errorf("amount %d stroops, want %d", pay.Amount, stroops)
	}
	var code []byte
	var issuer xdr.AccountId
	switch pay.Asset.Type {
	case xdr.AssetTypeAssetTypeCreditAlphanum4:
		code, issuer = pay.Asset.AlphaNum4.AssetCode[:], pay.Asset.AlphaNum4.Issuer
	case xdr.AssetTypeAssetTypeCreditAlphanum12:
		code, issuer = pay.Asset.AlphaNum12.AssetCode[:], pay.Asset.AlphaNum12.Issuer
	default:
		t.Fatalf("asset type %s", pay.Asset.Type)
	}
	if !bytes.Equal(code, codeBytes(asset.Code)) {
		t.Errorf("asset code %q (%s), want %q exactly", code, pay.Asset.Type, asset.Code)
	}
	if issuer.Address() != asset.Issuer {
		t.Errorf("asset issuer %s, want %s", issuer.Address(), asset.Issuer)
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

func TestEnvelopesMatchTheirPaymentRequests(t *testing.T) {
	assets := envelopeAssets()
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
				wallet := keypair.MustRandom().Address()
				stroops := amounts[(i+j)%len(amounts)]
				t.Run(fmt.Sprintf("%s/%s/%d", spelled, wallet[:4], stroops), func(t *testing.T) {
					req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: spelled, Amount: "x", Stroops: stroops}
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
					checkPayment(t, onlyOperation(t, o, e.vault), wallet, a, stroops)
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
							})
						}
					}
				}
			})
		}
	}
}
