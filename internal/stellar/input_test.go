package stellar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An address is read one way only, guards compare decoded accounts, an
// asset is the configured asset exactly, and contract mode calls the asset's own contract.

// withBreaks puts line breaks inside s, where encoding/base32 (under go-stellar-sdk's strkey)
// skips them. Eight characters keep the length a whole number of bytes, so strkey's own
// canonical-form check (leftover bits) does not catch them: strkey decodes the result.
func withBreaks(s string) string { return s[:20] + "\r\n\r\n\r\n\r\n" + s[20:] }

// parseNoPanic calls ParseAddress, turning a panic into an error that says so.
func parseNoPanic(s string) (kind transfer.AddressKind, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return Addresses{}.ParseAddress(s)
}

func TestParseAddressRefusesMalformedText(t *testing.T) {
	g := keypair.MustRandom().Address()
	c := strkey.MustEncode(strkey.VersionByteContract, make([]byte, 32))
	for _, s := range []string{
		withBreaks(g), withBreaks(c), g[:30] + "\n" + g[30:], "AAA\nA", "AAA\r\nA", "\nAAAA", g + "\n", " " + g,
		strings.ToLower(g), g[:55], g + "AA", g[:10] + "=" + g[11:], g[:10] + "0" + g[11:], g[:10] + "é" + g[12:],
	} {
		if _, err := parseNoPanic(s); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("ParseAddress(%q) = %v, want ErrInvalidAddress", s, err)
		}
		if _, err := decodeAddress(s); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("decodeAddress(%q) = %v, want ErrInvalidAddress", s, err)
		}
	}
}

func TestDecodeAddress(t *testing.T) {
	kp := keypair.MustRandom()
	g, err := decodeAccount(kp.Address())
	if err != nil || !g.isAccount() || g.String() != kp.Address() {
		t.Fatalf("account: %+v %v", g, err)
	}
	if sc := g.scAddress(); sc.Type != xdr.ScAddressTypeScAddressTypeAccount || sc.AccountId.Address() != kp.Address() {
		t.Errorf("account ScAddress %+v", sc)
	}
	id := make([]byte, 32)
	id[0] = 9
	cs := strkey.MustEncode(strkey.VersionByteContract, id)
	c, err := decodeContract(cs)
	if err != nil || c.isAccount() || c.String() != cs {
		t.Fatalf("contract: %+v %v", c, err)
	}
	if sc, _ := c.scAddress().String(); sc != cs {
		t.Errorf("contract ScAddress %s", sc)
	}
	if _, err := decodeContract(kp.Address()); err == nil {
		t.Error("decodeContract took an account")
	}
	if _, err := decodeAccount(cs); err == nil {
		t.Error("decodeAccount took a contract")
	}
	if _, err := decodeAddress(kp.Seed()); err == nil {
		t.Error("decodeAddress took a seed")
	}
}

// refused asserts err is 422 INVALID_ADDRESS, and that nothing reached the RPC.
func refused(t *testing.T, what string, err error, fake *fakeRPC, calls int) {
	t.Helper()
	var ve *transfer.ValidationError
	if !errors.As(err, &ve) || ve.Code != transfer.CodeInvalidAddress || ve.Kind != transfer.KindUnacceptable {
		t.Errorf("%s: %v, want 422 INVALID_ADDRESS", what, err)
	}
	if got := fake.methods(); len(got) != calls {
		t.Errorf("%s: RPC called %v", what, got[calls:])
	}
}

// Guards compare accounts, not text: no spelling of the vault passes, nor the fee account or a
// channel account (the service's own accounts).
func TestPrepareRefusesOwnAccountsAnySpelling(t *testing.T) {
	leases := &sourcestest.Leases{}
	e := newUnitEnv(t, func(c *RPCConfig) {
		pool, err := sources.NewChannelPool(sources.ChannelPoolConfig{Leases: leases, Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		c.Channels = pool
	})
	maxTime := time.Unix(1_700_000_060, 0)
	vault := e.keys.Vault.Address()
	for name, wallet := range map[string]string{
		"the vault":                vault,
		"the vault, line breaks":   withBreaks(vault),
		"the vault, lower case":    strings.ToLower(vault),
		"the issuer, line breaks":  withBreaks(e.issuer.Address()),
		"the fee account":          e.keys.Fee.Address(),
		"a channel account":        e.keys.Channels[0].Address(),
		"another channel account":  e.keys.Channels[1].Address(),
		"a wallet with line break": withBreaks(keypair.MustRandom().Address()),
		"short":                    "AAA\nA",
	} {
		_, err := e.ledger.Prepare(context.Background(), withdraw(wallet, unit), transfer.Terms{MaxTime: maxTime})
		refused(t, name, err, e.fake, 0)
	}
	if leases.Leased() != 0 {
		t.Error("a refused Prepare leased a channel")
	}
}

// The configuration is read one way too: the vault and issuers by their shape first, asset codes
// as stellar-core takes them.
func TestNewLedgerRefusesMalformedConfig(t *testing.T) {
	keys := sourcestest.Keys(t)
	issuer := keypair.MustRandom().Address()
	good := RPCConfig{URL: "http://127.0.0.1:8010/rpc", Passphrase: testPassphrase, VaultAccount: keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{{Code: "yUSDC", Issuer: issuer}, {Code: "A", Issuer: issuer}, {Code: "abcdefghijkl", Issuer: issuer}},
		Keys:   signing.StaticKeys{K: keys}}
	l, err := NewRPCLedger(good)
	if err != nil {
		t.Fatal(err)
	}
	if a, ok := l.assets.find("YUSDC"); !ok || a.credit.Code != "yUSDC" || a.credit.Issuer != issuer {
		t.Fatalf("find(YUSDC) = %+v, %v; want yUSDC as configured", a, ok)
	}
	for name, mutate := range map[string]func(*RPCConfig){
		"vault with line breaks":  func(c *RPCConfig) { c.VaultAccount = withBreaks(c.VaultAccount) },
		"vault short":             func(c *RPCConfig) { c.VaultAccount = "AAA\nA" },
		"issuer with line breaks": func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "USDC", Issuer: withBreaks(issuer)}} },
		"codes differ by case":    func(c *RPCConfig) { c.Assets = append(c.Assets, txnbuild.CreditAsset{Code: "YUSDC", Issuer: issuer}) },
		"code with a dash":        func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "US-D", Issuer: issuer}} },
		"code with a space":       func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "US D", Issuer: issuer}} },
		"code not ASCII":          func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "USDÇ", Issuer: issuer}} },
		"empty code":              func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "", Issuer: issuer}} },
		"13 characters":           func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "ABCDEFGHIJKLM", Issuer: issuer}} },
	} {
		c := good
		mutate(&c)
		if _, err := NewRPCLedger(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// ASSETS=yUSDC:G... must pay yUSDC, not YUSDC. The payment carries the code as configured, whatever
// the case the request used.
func TestPaymentCarriesTheConfiguredCode(t *testing.T) {
	e := newUnitEnv(t, func(c *RPCConfig) { c.Assets = []txnbuild.CreditAsset{{Code: "yUSDC", Issuer: c.Assets[0].Issuer}} })
	wallet := keypair.MustRandom().Address()
	for _, spelled := range []string{"yUSDC", "YUSDC", "yusdc"} {
		req := withdraw(wallet, unit)
		req.Asset = spelled
		env, err := e.ledger.Prepare(context.Background(), req, transfer.Terms{MaxTime: time.Unix(1_700_000_060, 0)})
		if err != nil {
			t.Fatal(err)
		}
		o := openEnvelope(t, env.XDR, testPassphrase)
		checkPayment(t, onlyOperation(t, o, e.keys.Vault.Address()), o.tx.Memo, wantOf(t, req, txnbuild.CreditAsset{Code: "yUSDC", Issuer: e.issuer.Address()}))
	}
}

// With two assets and one contract, 50 EURC would be withdrawn from the USDC contract.
func TestContractLedgerNeedsOneContractPerAsset(t *testing.T) {
	keys := sourcestest.Keys(t)
	issuer := keypair.MustRandom().Address()
	two, err := NewRPCLedger(RPCConfig{URL: "http://127.0.0.1:8010/rpc", Passphrase: testPassphrase, VaultAccount: keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: issuer}, {Code: "eurC", Issuer: issuer}}, Keys: signing.StaticKeys{K: keys}})
	if err != nil {
		t.Fatal(err)
	}
	c1, c2 := randomContract(), randomContract()
	for name, cfg := range map[string]ContractConfig{
		"one contract, two assets": {Contract: c1},
		"an asset without one":     {Contracts: map[string]string{"USDC": c1}},
		"one contract twice":       {Contracts: map[string]string{"USDC": c1, "EURC": c1}},
		"an unknown asset":         {Contracts: map[string]string{"USDC": c1, "EURC": c2, "GBP": randomContract()}},
		"an asset twice":           {Contracts: map[string]string{"USDC": c1, "usdc": c2, "EURC": randomContract()}},
		"both forms":               {Contract: c1, Contracts: map[string]string{"USDC": c1, "EURC": c2}},
		"an account":               {Contracts: map[string]string{"USDC": c1, "EURC": issuer}},
		"line breaks":              {Contracts: map[string]string{"USDC": c1, "EURC": withBreaks(c2)}},
		"none":                     {},
		"19 decimals":              {Contracts: map[string]string{"USDC": c1, "EURC": c2}, Decimals: 19},
	} {
		if _, err := NewContractLedger(two, cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	l, err := NewContractLedger(two, ContractConfig{Contracts: map[string]string{"usdc": c1, "EURC": c2}})
	if err != nil {
		t.Fatal(err)
	}
	for code, want := range map[string]string{"USDC": c1, "eurC": c2} {
		call, err := l.validate(transfer.Request{OperationType: transfer.Withdraw, WalletAddress: keypair.MustRandom().Address(),
			Asset: code, Stroops: 50 * unit})
		if err != nil || call.contract.String() != want || call.asset.credit.Code != code {
			t.Errorf("%s: contract %s (%s), %v; want %s", code, call.contract, call.asset.credit.Code, err, want)
		}
	}
}

// Contract mode refuses the vault, the asset's issuer, the vault contracts, the fee account and
// the channel accounts as the wallet, before simulating anything.
func TestContractPrepareRefusesOwnAccounts(t *testing.T) {
	assets := []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}, {Code: "EURC", Issuer: keypair.MustRandom().Address()}}
	e := newContractEnv(t, true, 7, assets)
	vault := e.keys.Vault.Address()
	for _, op := range []transfer.Operation{transfer.Deposit, transfer.Withdraw} {
		for name, wallet := range map[string]string{
			"the vault":               vault,
			"the vault, line breaks":  withBreaks(vault),
			"the asset's issuer":      assets[0].Issuer,
			"the asset's contract":    e.contracts["USDC"],
			"another vault contract":  e.contracts["EURC"],
			"the fee account":         e.keys.Fee.Address(),
			"a channel account":       e.keys.Channels[1].Address(),
			"a contract, line breaks": withBreaks(randomContract()),
			"short":                   "AAA\nA",
		} {
			_, err := e.ledger.Prepare(context.Background(), transfer.Request{OperationType: op, WalletAddress: wallet, Asset: "USDC",
				Stroops: unit}, transfer.Terms{MaxTime: time.Unix(1_700_000_060, 0)})

			refused(t, fmt.Sprintf("%s %s", op, name), err, e.fake, 0)
		}
	}
}

// VAULT_CONTRACT_DECIMALS=18 must not cap a transfer at 9.2233720 units (int64 scaling).
func TestContractAmountsAt18Decimals(t *testing.T) {
	e := newContractEnv(t, false, 18, []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}})
	for _, stroops := range []int64{1, 10 * unit, 1_000_000 * unit, math.MaxInt64} {
		call, err := e.ledger.validate(transfer.Request{OperationType: transfer.Withdraw, WalletAddress: keypair.MustRandom().Address(),
			Asset: "USDC", Stroops: stroops})
		if err != nil {
			t.Fatalf("%d stroops: %v", stroops, err)
		}
		want := new(big.Int).Mul(big.NewInt(stroops), big.NewInt(100_000_000_000))
		if got := fromInt128(call.amount); got.Cmp(want) != 0 {
			t.Errorf("%d stroops: i128 %s, want %s", stroops, got, want)
		}
	}
	// The i128 halves, checked by hand: 10 units at 18 decimals is 10^19 = 2^64 * 0 + 10^19.
	p, err := toInt128(new(big.Int).Exp(big.NewInt(10), big.NewInt(19), nil))
	if err != nil || p.Hi != 0 || uint64(p.Lo) != 10_000_000_000_000_000_000 {
		t.Errorf("10^19 = %+v, %v", p, err)
	}
	p, err = toInt128(new(big.Int).Lsh(big.NewInt(3), 64))
	if err != nil || p.Hi != 3 || p.Lo != 0 {
		t.Errorf("3 * 2^64 = %+v, %v", p, err)
	}
	if _, err := toInt128(new(big.Int).Lsh(big.NewInt(1), 127)); err == nil {
		t.Error("2^127 fits no i128")
	}
}

// Contract calls get the fee boost after a first-send txINSUFFICIENT_FEE, as payments do.
func TestContractInsufficientFeeRaisesTheFee(t *testing.T) {
	e := newContractEnv(t, false, 7, []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}})
	ctx := context.Background()
	req := transfer.Request{OperationType: transfer.Deposit, WalletAddress: keypair.MustRandom().Address(), Asset: "USDC", Stroops: unit}
	maxTime := time.Unix(1_700_000_060, 0)
	first, err := e.ledger.Prepare(ctx, req, transfer.Terms{MaxTime: maxTime})
	if err != nil {
		t.Fatal(err)
	}
	e.fake.answer("sendTransaction", protocol.SendTransactionResponse{Status: "ERROR",
		ErrorResultXDR: errorResultXDR(t, txResult(0, xdr.TransactionResultCodeTxInsufficientFee)), LatestLedger: 77})
	if res, err := e.ledger.Send(ctx, first); err != nil || res.Code != "txINSUFFICIENT_FEE" {
		t.Fatalf("Send = %+v, %v", res, err)
	}
	e.ledger.Done(ctx, first) // refused before inclusion: its fate is decided, the vault is free
	rebuilt, err := e.ledger.Prepare(ctx, req, transfer.Terms{MaxTime: maxTime})
	if err != nil {
		t.Fatal(err)
	}
	inclusion := func(env transfer.Envelope) int64 { return env.FeeStroops - e.resourceFee }
	if inclusion(rebuilt) != 2*inclusion(first) {
		t.Errorf("inclusion fee %d stroops after the refusal, want twice %d", inclusion(rebuilt), inclusion(first))
	}
}
