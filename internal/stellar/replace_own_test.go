package stellar

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// payOps is n native payments to a random account, as operations of an envelope.
func payOps(n int) []xdr.Operation {
	var dest xdr.MuxedAccount
	if err := dest.SetAddress(keypair.MustRandom().Address()); err != nil {
		panic(err)
	}
	ops := make([]xdr.Operation, n)
	for i := range ops {
		ops[i] = xdr.Operation{Body: xdr.OperationBody{Type: xdr.OperationTypePayment,
			PaymentOp: &xdr.PaymentOp{Destination: dest, Asset: xdr.MustNewNativeAsset(), Amount: 1}}}
	}
	return ops
}

func muxed(t *testing.T, address string) xdr.MuxedAccount {
	t.Helper()
	var m xdr.MuxedAccount
	if err := m.SetAddress(address); err != nil {
		t.Fatal(err)
	}
	return m
}

// plainTx is an envelope of ops payments from source offering fee stroops.
func plainTx(t *testing.T, source string, fee uint32, ops int) xdr.TransactionEnvelope {
	return xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: &xdr.TransactionV1Envelope{
		Tx: xdr.Transaction{SourceAccount: muxed(t, source), Fee: xdr.Uint32(fee), Operations: payOps(ops)}}}
}

// bumpTx is a fee bump paid by feeSource, offering fee stroops, around ops payments of a random
// source.
func bumpTx(t *testing.T, feeSource string, fee int64, ops int) xdr.TransactionEnvelope {
	inner := plainTx(t, keypair.MustRandom().Address(), 100, ops)
	return xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTxFeeBump, FeeBump: &xdr.FeeBumpTransactionEnvelope{
		Tx: xdr.FeeBumpTransaction{FeeSource: muxed(t, feeSource), Fee: xdr.Int64(fee),
			InnerTx: xdr.FeeBumpTransactionInnerTx{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: inner.V1}}}}
}

// closeMeta is a ledger's LedgerCloseMeta v2 whose classic phase holds classic (one component
// per base fee, as sequentialPhaseToXdr writes it) and whose Soroban phase holds soroban.
func closeMeta(seq uint32, classic [][]xdr.TransactionEnvelope, soroban []xdr.TransactionEnvelope) xdr.LedgerCloseMeta {
	comps := []xdr.TxSetComponent{}
	for i, txs := range classic {
		fee := xdr.Int64(100 * (i + 1))
		comps = append(comps, xdr.TxSetComponent{Type: xdr.TxSetComponentTypeTxsetCompTxsMaybeDiscountedFee,
			TxsMaybeDiscountedFee: &xdr.TxSetComponentTxsMaybeDiscountedFee{BaseFee: &fee, Txs: txs}})
	}
	stages := []xdr.ParallelTxExecutionStage{}
	if len(soroban) > 0 {
		stages = append(stages, xdr.ParallelTxExecutionStage{soroban})
	}
	base := xdr.Int64(100)
	return xdr.LedgerCloseMeta{V: 2, V2: &xdr.LedgerCloseMetaV2{
		LedgerHeader: xdr.LedgerHeaderHistoryEntry{Header: xdr.LedgerHeader{LedgerSeq: xdr.Uint32(seq), BaseFee: 100}},
		TxSet: xdr.GeneralizedTransactionSet{V: 1, V1TxSet: &xdr.TransactionSetV1{Phases: []xdr.TransactionPhase{
			{V: 0, V0Components: &comps},
			{V: 1, ParallelTxsComponent: &xdr.ParallelTxsComponent{BaseFee: &base, ExecutionStages: stages}},
		}}},
	}}
}

// answerLatest makes e's getLatestLedger answer ledger 77 with meta as its metadataXdr.
func answerLatest(t *testing.T, e *unitEnv, meta xdr.LedgerCloseMeta) {
	t.Helper()
	b64, err := xdr.MarshalBase64(meta)
	if err != nil {
		t.Fatal(err)
	}
	e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerCloseTime: 1_700_000_000, LedgerMetadata: b64})
}

// queuedBump is a fee bump paid by e's fee account at rate stroops per slot around ops payments
// of a channel: the queued envelope a replacement starts from.
func queuedBump(t *testing.T, e *unitEnv, rate int64, ops int) (transfer.Envelope, envelopeShape) {
	t.Helper()
	src := keypair.MustRandom()
	payments := make([]txnbuild.Operation, ops)
	for i := range payments {
		payments[i] = &txnbuild.Payment{Destination: keypair.MustRandom().Address(), Amount: "1", Asset: txnbuild.NativeAsset{}}
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{SourceAccount: &txnbuild.SimpleAccount{AccountID: src.Address(), Sequence: 1},
		Operations: payments, BaseFee: 100, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, 2_000_000_000)}})
	if err == nil {
		tx, err = tx.Sign(testPassphrase, src)
	}
	if err != nil {
		t.Fatal(err)
	}
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: tx, FeeAccount: e.keys.Fee.Address(), BaseFee: rate})
	if err == nil {
		fb, err = fb.Sign(testPassphrase, e.keys.Fee)
	}
	if err != nil {
		t.Fatal(err)
	}
	env := transfer.Envelope{}
	env.XDR, _ = fb.Base64()
	env.OuterHash, _ = fb.HashHex(testPassphrase)
	env.InnerHash, _ = tx.HashHex(testPassphrase)
	env.FeeStroops = fb.MaxFee()
	shape, err := envelopeFee(env.XDR)
	if err != nil {
		t.Fatal(err)
	}
	return env, shape
}

// surgeEnv is a unit ledger whose classic fee stats show a surge (p99 at 5,000 stroops, above
// twice the base fee of 250), so only the latest ledger's bids decide a replacement.
func surgeEnv(t *testing.T) *unitEnv {
	e := newUnitEnv(t, func(c *RPCConfig) { c.MaxFeeStroops = 10_000_000 })
	d := protocol.FeeDistribution{P10: 5_000, P20: 5_000, P30: 5_000, P40: 5_000, P50: 5_000, P60: 5_000, P70: 5_000,
		P80: 5_000, P90: 5_000, P95: 5_000, P99: 5_000}
	e.fake.answer("getFeeStats", protocol.GetFeeStatsResponse{InclusionFee: d, SorobanInclusionFee: d, LatestLedger: 77})
	return e
}

// A lane surge priced by this deployment's own fee bumps alone is no reason to replace: the
// replacement would outbid them, and they would replace in turn. The latest ledger took two of
// the deployment's batches at the queued envelope's rate and one above it, and others' payments
// only below it: Replace answers ErrNoReplacement naming the deployment's own bids, and builds
// nothing.
func TestReplaceNotAgainstOwnBids(t *testing.T) {
	e := surgeEnv(t)
	env, shape := queuedBump(t, e, 400, 100)
	fee := e.keys.Fee.Address()
	answerLatest(t, e, closeMeta(77, [][]xdr.TransactionEnvelope{
		{plainTx(t, keypair.MustRandom().Address(), 300, 1), bumpTx(t, fee, 400*101, 100)},
		{bumpTx(t, fee, 400*101, 100), bumpTx(t, fee, 4_000*2, 1)},
	}, nil))
	_, err := e.ledger.Replace(context.Background(), env)
	if !errors.Is(err, transfer.ErrNoReplacement) || !strings.Contains(err.Error(), errOwnBidsOnly) {
		t.Fatalf("Replace: %v, want ErrNoReplacement %q", err, errOwnBidsOnly)
	}
	if shape.rate() != 400 {
		t.Fatalf("the queued envelope bids %d per slot, want 400", shape.rate())
	}
}

// Another party's transaction included at the queued envelope's rate took the room at its price
// (stellar-core compares rates exactly: 400 over one slot against 40,400 over 101): the
// replacement is built as before, the same inner transaction at 10x the rate per slot.
func TestReplaceWhenAnotherPartyTookTheRoomAtOurRate(t *testing.T) {
	e := surgeEnv(t)
	env, shape := queuedBump(t, e, 400, 100)
	answerLatest(t, e, closeMeta(77, [][]xdr.TransactionEnvelope{
		{bumpTx(t, e.keys.Fee.Address(), 400*101, 100), plainTx(t, keypair.MustRandom().Address(), 400, 1)},
	}, nil))
	next, err := e.ledger.Replace(context.Background(), env)
	if err != nil {
		t.Fatalf("Replace: %v", err)
	}
	got, err := envelopeFee(next.XDR)
	if err != nil {
		t.Fatal(err)
	}
	if next.InnerHash != env.InnerHash || next.OuterHash == env.OuterHash || got.slots != shape.slots || got.fee < 10*shape.fee {
		t.Fatalf("replacement %s/%s at %d stroops over %d slots, want the inner %s at >= %d over %d",
			next.InnerHash, next.OuterHash, got.fee, got.slots, env.InnerHash, 10*shape.fee, shape.slots)
	}
}

// The rule itself, bid by bid: only a classic transaction paid by someone else at or above the
// queued rate allows a replacement. Whatever the fee account, the vault or a channel account paid
// is this deployment's; another fee account's fee bump is someone else's whatever it wraps; a
// Soroban transaction does not count for a classic envelope.
func TestReplaceOnlyWhenAnotherPartyBidAtOrAboveOurRate(t *testing.T) {
	fee, vault, channel, other := keypair.MustRandom().Address(), keypair.MustRandom().Address(), keypair.MustRandom().Address(), keypair.MustRandom().Address()
	ours := map[string]bool{vault: true, channel: true}
	shape := envelopeShape{lane: laneClassic, ops: 100, slots: 101, fee: 400 * 101}
	soroban := plainTx(t, other, 1_000_000, 1)
	soroban.V1.Tx.Operations[0].Body = xdr.OperationBody{Type: xdr.OperationTypeRestoreFootprint, RestoreFootprintOp: &xdr.RestoreFootprintOp{}}
	for _, tc := range []struct {
		name    string
		txs     []xdr.TransactionEnvelope
		replace bool
		own     bool
	}{
		{"ours above, another's below", []xdr.TransactionEnvelope{bumpTx(t, fee, 4_000*101, 100), plainTx(t, other, 399, 1)}, false, true},
		{"another's one stroop below, over more slots", []xdr.TransactionEnvelope{plainTx(t, other, 400*3-1, 3)}, false, false},
		{"another's at our rate", []xdr.TransactionEnvelope{plainTx(t, other, 400*3, 3)}, true, false},
		{"another fee account's bump above", []xdr.TransactionEnvelope{bumpTx(t, other, 500*2, 1)}, true, false},
		{"the vault's and a channel's own above", []xdr.TransactionEnvelope{plainTx(t, vault, 1_000, 1), plainTx(t, channel, 1_000, 1)}, false, true},
		{"our fee account's own transaction above", []xdr.TransactionEnvelope{plainTx(t, fee, 1_000, 1)}, false, true},
		{"a Soroban transaction far above", []xdr.TransactionEnvelope{soroban}, false, false},
		{"an empty ledger", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			meta := closeMeta(9, nil, nil)
			if tc.txs != nil {
				meta = closeMeta(9, [][]xdr.TransactionEnvelope{tc.txs}, nil)
			}
			bids, err := setBids(meta)
			if err != nil {
				t.Fatal(err)
			}
			err = (&common{}).outbidByOthers(context.Background(), fixedBids{lb: laneBids{ledger: 9, bids: bids}}, shape, fee, ours)
			switch {
			case tc.replace && err != nil:
				t.Fatalf("outbidByOthers: %v, want a replacement", err)
			case !tc.replace && !errors.Is(err, transfer.ErrNoReplacement):
				t.Fatalf("outbidByOthers: %v, want ErrNoReplacement", err)
			case !tc.replace && strings.Contains(err.Error(), errOwnBidsOnly) != tc.own:
				t.Fatalf("outbidByOthers: %v, naming own bids %v", err, tc.own)
			}
		})
	}
}

// fixedBids is a chain whose latest ledger included lb.
type fixedBids struct {
	chain
	lb laneBids
}

func (f fixedBids) latestBids(context.Context) (laneBids, error) { return f.lb, nil }

// A latest ledger that cannot be read, or whose answer is malformed, is no replacement this
// ledger and no panic: Replace answers a plain error (the envelope waits and is judged again at
// the next ledger), never ErrNoReplacement, which would say the judgment was made.
func TestReplaceUnreadableLedgerIsAPlainError(t *testing.T) {
	whole, err := closeMeta(77, [][]xdr.TransactionEnvelope{{plainTx(t, keypair.MustRandom().Address(), 400, 1)}}, nil).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	truncated := base64.StdEncoding.EncodeToString(whole[:len(whole)/2])
	for _, tc := range []struct {
		name   string
		answer func(e *unitEnv)
	}{
		{"metadataXdr not XDR", func(e *unitEnv) {
			e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerMetadata: "bm90IHhkcg=="})
		}},
		{"metadataXdr cut short", func(e *unitEnv) {
			e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerMetadata: truncated})
		}},
		{"no metadataXdr and getLedgers answering another ledger", func(e *unitEnv) {
			e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77})
			e.fake.answer("getLedgers", protocol.GetLedgersResponse{LatestLedger: 78, Ledgers: []protocol.LedgerInfo{{Sequence: 78}}})
		}},
		{"no metadataXdr and getLedgers without the ledger", func(e *unitEnv) {
			e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77})
			e.fake.answer("getLedgers", protocol.GetLedgersResponse{LatestLedger: 77})
		}},
		{"no metadataXdr and getLedgers refused", func(e *unitEnv) {
			e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77})
			e.fake.handle("getLedgers", func(json.RawMessage) (any, *rpcError) {
				return nil, &rpcError{Code: -32600, Message: "start ledger out of range"}
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := surgeEnv(t)
			env, _ := queuedBump(t, e, 400, 100)
			tc.answer(e)
			next, err := e.ledger.Replace(context.Background(), env)
			if err == nil || errors.Is(err, transfer.ErrNoReplacement) || next.XDR != "" {
				t.Fatalf("Replace: %+v, %v; want a plain error and no envelope", next, err)
			}
		})
	}
}

// Behind a load balancer (RPCConfig.LoadBalanced) getLatestLedger can come from an instance a
// ledger ahead of the one answering getLedgers, which refuses the newest ledger as out of its
// range. A stellar-rpc without metadataXdr in getLatestLedger then still judges from the ledger
// before, which closed while the envelope waited too: another party's payment above the queued
// rate there allows the replacement.
func TestReplaceOverRPCReadsTheLedgerBeforeOneNotYetIngested(t *testing.T) {
	e := surgeEnv(t)
	env, _ := queuedBump(t, e, 400, 100)
	before, err := xdr.MarshalBase64(closeMeta(76, [][]xdr.TransactionEnvelope{{plainTx(t, keypair.MustRandom().Address(), 1_000, 1)}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerCloseTime: 1_700_000_000})
	e.fake.handle("getLedgers", func(params json.RawMessage) (any, *rpcError) {
		var req protocol.GetLedgersRequest
		if err := json.Unmarshal(params, &req); err != nil || req.StartLedger != 76 {
			return nil, &rpcError{Code: -32600, Message: "start ledger must be between the oldest ledger: 1 and the latest ledger: 76 for this rpc instance"}
		}
		return protocol.GetLedgersResponse{LatestLedger: 76, Ledgers: []protocol.LedgerInfo{{Sequence: 76, LedgerMetadata: before}}}, nil
	})
	next, err := e.ledger.Replace(context.Background(), env)
	if err != nil || next.InnerHash != env.InnerHash || next.OuterHash == env.OuterHash {
		t.Fatalf("Replace: %+v, %v; want a replacement judged from ledger 76", next, err)
	}
}

// Rates are compared exactly, as feeRate3WayCompare does, whatever the fees: a bid of nearly
// 2^63 stroops over 101 slots against one over 100 is told apart without overflow, a negative
// bid (a resource fee above the fee) is never at or above a positive rate.
func TestReplaceRatesComparedExactlyAtHugeFees(t *testing.T) {
	const top = math.MaxInt64
	for _, tc := range []struct {
		bid        ledgerBid
		fee, slots int64
		atOrAbove  bool
	}{
		{ledgerBid{inclusionFee: top, slots: 1}, top, 101, true},
		{ledgerBid{inclusionFee: top, slots: 101}, top - 1, 100, false},
		{ledgerBid{inclusionFee: top - 1, slots: 100}, top, 101, true},
		{ledgerBid{inclusionFee: top, slots: 101}, top, 101, true},
		{ledgerBid{inclusionFee: -1, slots: 1}, 1, 1, false},
		{ledgerBid{inclusionFee: 1, slots: 1}, top, 1, false},
	} {
		if got := tc.bid.atOrAbove(tc.fee, tc.slots); got != tc.atOrAbove {
			t.Errorf("%+v at or above %d over %d: %v, want %v", tc.bid, tc.fee, tc.slots, got, tc.atOrAbove)
		}
	}
}

// A muxed fee source (M...) is its account's: the fee is paid by the underlying G account,
// whatever the mux id. The vault's or the fee account's transaction under a muxed address is
// this deployment's own bid, and another party's under a muxed address is someone else's.
func TestReplaceMuxedFeeSourceIsItsAccounts(t *testing.T) {
	fee, vault, other := keypair.MustRandom(), keypair.MustRandom(), keypair.MustRandom()
	shape := envelopeShape{lane: laneClassic, ops: 1, slots: 2, fee: 400 * 2}
	muxedOf := func(kp *keypair.Full, id uint64) xdr.MuxedAccount {
		m, err := xdr.MuxedAccountFromAccountId(kp.Address(), id)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	vaultTx := plainTx(t, vault.Address(), 1_000, 1)
	vaultTx.V1.Tx.SourceAccount = muxedOf(vault, 7)
	feeBump := bumpTx(t, fee.Address(), 1_000*2, 1)
	feeBump.FeeBump.Tx.FeeSource = muxedOf(fee, 9)
	otherTx := plainTx(t, other.Address(), 1_000, 1)
	otherTx.V1.Tx.SourceAccount = muxedOf(other, 3)
	for _, tc := range []struct {
		name    string
		tx      xdr.TransactionEnvelope
		replace bool
	}{{"the vault muxed", vaultTx, false}, {"the fee account muxed", feeBump, false}, {"another party muxed", otherTx, true}} {
		t.Run(tc.name, func(t *testing.T) {
			bids, err := setBids(closeMeta(9, [][]xdr.TransactionEnvelope{{tc.tx}}, nil))
			if err != nil {
				t.Fatal(err)
			}
			err = (&common{}).outbidByOthers(context.Background(), fixedBids{lb: laneBids{ledger: 9, bids: bids}}, shape, fee.Address(), map[string]bool{vault.Address(): true})
			switch {
			case tc.replace && err != nil:
				t.Fatalf("outbidByOthers: %v, want a replacement", err)
			case !tc.replace && (!errors.Is(err, transfer.ErrNoReplacement) || !strings.Contains(err.Error(), errOwnBidsOnly)):
				t.Fatalf("outbidByOthers: %v, want ErrNoReplacement naming the deployment's own bids", err)
			}
		})
	}
}

// Over stellar-rpc without metadataXdr in getLatestLedger, a closed ledger's LedgerCloseMeta
// (megabytes on pubnet) is fetched once per process, however many envelopes are judged while it
// is the latest.
func TestReplaceReadsALedgersBidsOnceOverRPC(t *testing.T) {
	e := surgeEnv(t)
	meta, err := xdr.MarshalBase64(closeMeta(77, [][]xdr.TransactionEnvelope{{plainTx(t, keypair.MustRandom().Address(), 100, 1)}}, nil))
	if err != nil {
		t.Fatal(err)
	}
	e.fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerCloseTime: 1_700_000_000})
	var asked atomic.Int32
	e.fake.handle("getLedgers", func(json.RawMessage) (any, *rpcError) {
		asked.Add(1)
		return protocol.GetLedgersResponse{LatestLedger: 77, Ledgers: []protocol.LedgerInfo{{Sequence: 77, LedgerMetadata: meta}}}, nil
	})
	for i := range 3 {
		env, _ := queuedBump(t, e, 400, 1)
		if _, err := e.ledger.Replace(context.Background(), env); !errors.Is(err, transfer.ErrNoReplacement) {
			t.Fatalf("judgment %d: %v, want ErrNoReplacement", i+1, err)
		}
	}
	if got := asked.Load(); got != 1 {
		t.Fatalf("getLedgers asked %d times for 3 judgments of ledger 77, want once", got)
	}
}

// Every LedgerCloseMeta version stellar-rpc may serve is read for its bids: v0's legacy set
// (a V0 envelope's source its payer), v1's generalized set whose Soroban phase is still a
// component list (protocols 20 to 22), v2's with a parallel Soroban phase; an unknown version,
// or a version without its body, is a plain error, never a panic.
func TestReplaceBidsReadFromEveryLedgerCloseMetaVersion(t *testing.T) {
	other := keypair.MustRandom()
	v0 := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTxV0, V0: &xdr.TransactionV0Envelope{Tx: xdr.TransactionV0{
		SourceAccountEd25519: *muxed(t, other.Address()).Ed25519, Fee: 1_000, Operations: payOps(1)}}}
	soroban := plainTx(t, other.Address(), 1_000_000, 1)
	soroban.V1.Tx.Operations[0].Body = xdr.OperationBody{Type: xdr.OperationTypeRestoreFootprint, RestoreFootprintOp: &xdr.RestoreFootprintOp{}}
	classic := []xdr.TxSetComponent{{Type: xdr.TxSetComponentTypeTxsetCompTxsMaybeDiscountedFee,
		TxsMaybeDiscountedFee: &xdr.TxSetComponentTxsMaybeDiscountedFee{Txs: []xdr.TransactionEnvelope{plainTx(t, other.Address(), 1_000, 1)}}}}
	sorobanComps := []xdr.TxSetComponent{{Type: xdr.TxSetComponentTypeTxsetCompTxsMaybeDiscountedFee,
		TxsMaybeDiscountedFee: &xdr.TxSetComponentTxsMaybeDiscountedFee{Txs: []xdr.TransactionEnvelope{soroban}}}}
	v1 := xdr.LedgerCloseMeta{V: 1, V1: &xdr.LedgerCloseMetaV1{TxSet: xdr.GeneralizedTransactionSet{V: 1, V1TxSet: &xdr.TransactionSetV1{
		Phases: []xdr.TransactionPhase{{V: 0, V0Components: &classic}, {V: 0, V0Components: &sorobanComps}}}}}}
	for _, tc := range []struct {
		name             string
		meta             xdr.LedgerCloseMeta
		classic, soroban int
	}{
		{"v0 legacy set", xdr.LedgerCloseMeta{V: 0, V0: &xdr.LedgerCloseMetaV0{TxSet: xdr.TransactionSet{Txs: []xdr.TransactionEnvelope{v0}}}}, 1, 0},
		{"v1 generalized set", v1, 1, 1},
		{"v2 parallel Soroban phase", closeMeta(9, [][]xdr.TransactionEnvelope{{plainTx(t, other.Address(), 1_000, 1)}}, []xdr.TransactionEnvelope{soroban}), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bids, err := setBids(tc.meta)
			if err != nil {
				t.Fatal(err)
			}
			lanes := map[feeLane]int{}
			for _, b := range bids {
				lanes[b.lane]++
				if b.feeSource != other.Address() {
					t.Fatalf("bid paid by %s, want %s", b.feeSource, other.Address())
				}
			}
			if lanes[laneClassic] != tc.classic || lanes[laneSoroban] != tc.soroban {
				t.Fatalf("bids %+v, want %d classic and %d Soroban", bids, tc.classic, tc.soroban)
			}
		})
	}
	for _, meta := range []xdr.LedgerCloseMeta{{V: 3}, {V: 2}, {V: 1, V1: &xdr.LedgerCloseMetaV1{TxSet: xdr.GeneralizedTransactionSet{V: 1}}}} {
		if _, err := setBids(meta); err == nil {
			t.Fatalf("setBids(%+v): no error", meta)
		}
	}
}
