package stellar

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// stillMarket is a chain whose fee stats are fixed.
type stillMarket struct {
	chain
	m marketFees
}

func (s stillMarket) feeStats(context.Context) (marketFees, error) { return s.m, nil }

// surgeShown reads a lane as surge priced when its p99 is above the base fee (Horizon's rule).
func (s stillMarket) surgeShown(_ context.Context, _ feeLane, fees feeDistribution, base int64) (bool, error) {
	return fees.at(99) > base, nil
}

func flat(f int64) feeDistribution { return newFeeDistribution(f, f, f, f, f, f, f, f, f, f, f) }

// feeEnvelope signs a one-operation transaction at baseFee per operation (with resourceFee
// declared for a contract call), fee-bumped at bumpRate per slot when bumpRate > 0.
func feeEnvelope(t *testing.T, soroban bool, baseFee, resourceFee, bumpRate int64) transfer.Envelope {
	t.Helper()
	src := keypair.MustRandom()
	var op txnbuild.Operation = &txnbuild.Payment{Destination: keypair.MustRandom().Address(), Amount: "1", Asset: txnbuild.NativeAsset{}}
	if soroban {
		op = &txnbuild.InvokeHostFunction{
			HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract, InvokeContract: &xdr.InvokeContractArgs{
				ContractAddress: xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeContract, ContractId: &xdr.ContractId{1}}, FunctionName: "withdraw"}},
			Ext: xdr.TransactionExt{V: 1, SorobanData: &xdr.SorobanTransactionData{ResourceFee: xdr.Int64(resourceFee)}},
		}
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: src.Address(), Sequence: 1}, Operations: []txnbuild.Operation{op},
		BaseFee: baseFee, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, 2_000_000_000)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign("test", src); err != nil {
		t.Fatal(err)
	}
	var b64 string
	if bumpRate > 0 {
		fee := keypair.MustRandom()
		fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: tx, FeeAccount: fee.Address(), BaseFee: bumpRate})
		if err != nil {
			t.Fatal(err)
		}
		if fb, err = fb.Sign("test", fee); err != nil {
			t.Fatal(err)
		}
		b64, err = fb.Base64()
		if err != nil {
			t.Fatal(err)
		}
	} else if b64, err = tx.Base64(); err != nil {
		t.Fatal(err)
	}
	return transfer.Envelope{XDR: b64}
}

func usdcOnly() []txnbuild.CreditAsset {
	return []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}}
}

func insufficient(feeCharged int64) xdr.TransactionResult {
	return xdr.TransactionResult{FeeCharged: xdr.Int64(feeCharged), Result: xdr.TransactionResultResult{Code: xdr.TransactionResultCodeTxInsufficientFee}}
}

// The fee a txINSUFFICIENT_FEE answer names becomes the lane's rate, per operation slot and
// without the resource fee, rounded up; an answer that names nothing above the envelope's own
// fee doubles its rate; the hint lapses after FeeHintTTL; the other lane is untouched.
func TestFeeNamedByTheNetwork(t *testing.T) {
	for _, tc := range []struct {
		name     string
		env      func(t *testing.T) transfer.Envelope
		named    int64
		lane     feeLane
		wantRate int64
	}{
		{"payment", func(t *testing.T) transfer.Envelope { return feeEnvelope(t, false, 100, 0, 0) }, 1_001, laneClassic, 1_001},
		{"fee bump", func(t *testing.T) transfer.Envelope { return feeEnvelope(t, false, 100, 0, 100) }, 2_001, laneClassic, 1_001},
		{"contract call", func(t *testing.T) transfer.Envelope { return feeEnvelope(t, true, 100, 50_000, 0) }, 50_701, laneSoroban, 701},
		{"fee-bumped contract call", func(t *testing.T) transfer.Envelope { return feeEnvelope(t, true, 100, 50_000, 100) }, 51_401, laneSoroban, 701},
		{"nothing named", func(t *testing.T) transfer.Envelope { return feeEnvelope(t, false, 300, 0, 0) }, 0, laneClassic, 600},
		{"no more than offered", func(t *testing.T) transfer.Envelope { return feeEnvelope(t, false, 300, 0, 0) }, 300, laneClassic, 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := vclock.New(time.Unix(1_900_000_000, 0))
			c, err := newCommon("test", keypair.MustRandom().Address(), usdcOnly(), 100, 0, 90, signing.StaticKeys{}, nil, clock, nil)
			if err != nil {
				t.Fatal(err)
			}
			ch := stillMarket{m: marketFees{flat(100), flat(100)}}
			c.refusedAsTooLow(tc.env(t), insufficient(tc.named))
			b := feeBid{lane: tc.lane, slots: 1}
			if got, err := c.bidRate(context.Background(), ch, b); err != nil || got != tc.wantRate {
				t.Errorf("rate %d, %v; want %d", got, err, tc.wantRate)
			}
			if got, _ := c.bidRate(context.Background(), ch, feeBid{lane: 1 - tc.lane, slots: 1}); got != 100 {
				t.Errorf("the other lane's rate %d, want its fee stats' 100", got)
			}
			_ = clock.Sleep(context.Background(), FeeHintTTL)
			if got, _ := c.bidRate(context.Background(), ch, b); got != 100 {
				t.Errorf("rate %d after FeeHintTTL, want the fee stats' 100", got)
			}
		})
	}
}

// bidRate: the highest of the base fee, the lane's fee stats, the named fee and the caller's
// floor; above the cap (resource fee included) it is FEE_ABOVE_CAP, never a lowered bid.
func TestBidRate(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	c, err := newCommon("test", keypair.MustRandom().Address(), usdcOnly(), 100, 10_000, 90, signing.StaticKeys{}, nil, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := stillMarket{m: marketFees{flat(2_000), flat(0)}}
	for _, tc := range []struct {
		name string
		b    feeBid
		want int64
		code string
	}{
		{"classic market", feeBid{lane: laneClassic, slots: 2}, 2_000, ""},
		{"Soroban lane empty: base fee", feeBid{lane: laneSoroban, slots: 1, resourceFee: 5_000}, 100, ""},
		{"a floor above the market", feeBid{lane: laneClassic, slots: 1, atLeast: 5_000}, 5_000, ""},
		{"market above the cap", feeBid{lane: laneClassic, slots: 6}, 0, transfer.CodeFeeAboveCap},
		{"resource fee leaves too little", feeBid{lane: laneSoroban, slots: 1, resourceFee: 9_950, atLeast: 100}, 0, "plain"},
		{"floor above the cap", feeBid{lane: laneSoroban, slots: 2, resourceFee: 5_000, atLeast: 2_501}, 0, transfer.CodeFeeAboveCap},
	} {
		got, err := c.bidRate(context.Background(), ch, tc.b)
		var u *transfer.UnavailableError
		switch {
		case tc.code == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		case tc.code == transfer.CodeFeeAboveCap && (!errors.As(err, &u) || u.Code != tc.code || u.RetryAfter < transfer.DefaultLedgerInterval):
			t.Errorf("%s: %d, %v; want %s with a Retry-After", tc.name, got, err, tc.code)
		case tc.code == "plain" && (err == nil || errors.As(err, &u)):
			t.Errorf("%s: %d, %v; want a configuration error", tc.name, got, err)
		}
	}
}

// MAX_FEE_STROOPS is per payment: an envelope of n payments may bid up to n times it in all (a
// batch of 100 fee-bumped has 101 slots under 100 caps), one transfer exactly the cap, as before;
// FEE_ABOVE_CAP's detail names the cap that applied.
func TestTheFeeCapIsPerPayment(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	c, err := newCommon("test", keypair.MustRandom().Address(), usdcOnly(), 100, 10_000, 90, signing.StaticKeys{}, nil, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	ch := stillMarket{m: marketFees{flat(2_000), flat(0)}}
	for _, tc := range []struct {
		name   string
		b      feeBid
		want   int64
		detail string // a substring of FEE_ABOVE_CAP's detail; "" when it fits
	}{
		{"one transfer at the market", feeBid{lane: laneClassic, slots: 2, payments: 1}, 2_000, ""},
		{"one transfer at the cap", feeBid{lane: laneClassic, slots: 2, payments: 1, atLeast: 5_000}, 5_000, ""},
		{"one transfer above the cap", feeBid{lane: laneClassic, slots: 2, payments: 1, atLeast: 5_001}, 0, "10002 stroops in all, above MAX_FEE_STROOPS 10000;"},
		{"a batch of 100 at the market", feeBid{lane: laneClassic, slots: 101, payments: 100}, 2_000, ""},
		{"a batch's replacement at 10x the market", feeBid{lane: laneClassic, slots: 101, payments: 100, atLeast: 9_900}, 9_900, ""},
		{"a batch above 100 caps", feeBid{lane: laneClassic, slots: 101, payments: 100, atLeast: 9_901}, 0, "1000001 stroops in all, above 100 x MAX_FEE_STROOPS 10000 (1000000);"},
	} {
		got, err := c.bidRate(context.Background(), ch, tc.b)
		var u *transfer.UnavailableError
		switch {
		case tc.detail == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		case tc.detail != "" && (!errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap || !strings.Contains(u.Detail, tc.detail)):
			t.Errorf("%s: %d, %v; want FEE_ABOVE_CAP naming %q", tc.name, got, err, tc.detail)
		}
	}
}

// A batch bids, while its lane is surge priced, the lane's p99 (the highest recent clearing rate)
// when that is above the single transfer's rate, within its budget and never FEE_ABOVE_CAP for
// it; one transfer, or a lane charging the base fee, bids as before.
func TestABatchBidsTheHighestRecentRateUnderSurgePricing(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	c, err := newCommon("test", keypair.MustRandom().Address(), usdcOnly(), 100, 1_000, 90, signing.StaticKeys{}, nil, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	surge := stillMarket{m: marketFees{newFeeDistribution(100, 100, 100, 100, 100, 100, 150, 200, 300, 600, 2_000), flat(0)}}
	quiet := stillMarket{m: marketFees{flat(100), flat(0)}}
	for _, tc := range []struct {
		name string
		ch   stillMarket
		b    feeBid
		want int64
	}{
		{"one transfer: p90", surge, feeBid{lane: laneClassic, slots: 2, payments: 1}, 300},
		{"a batch of 10: p99, stopped at its budget", surge, feeBid{lane: laneClassic, slots: 11, payments: 10}, 909},
		{"a batch of 100: p99, also past its budget", surge, feeBid{lane: laneClassic, slots: 101, payments: 100}, 990},
		{"a batch on a quiet lane: the base fee", quiet, feeBid{lane: laneClassic, slots: 101, payments: 100}, 100},
	} {
		c.fees = &feeCache{}
		got, err := c.bidRate(context.Background(), tc.ch, tc.b)
		if err != nil || got != tc.want {
			t.Errorf("%s: %d, %v; want %d", tc.name, got, err, tc.want)
		}
	}
}
