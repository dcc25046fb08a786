package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// CanonicalMemo's rule is "text: 0 to 28 bytes of UTF-8", and the fingerprint takes the text byte
// for byte; a text that is not UTF-8 (only a caller other than the JSON door can send one: a
// queue, a replay tool) must be INVALID_MEMO, as the API's door would have to refuse it, never a
// memo that a JSON answer, event or history then shows as U+FFFD, another memo than the one paid.
func TestCanonicalMemoTextIsUTF8(t *testing.T) {
	for _, v := range []string{"\xff", "acct-\xc3", "\xed\xa0\x80"} {
		_, err := transfer.CanonicalMemo(&transfer.RawMemo{Type: "text", Value: v})
		var ve *transfer.ValidationError
		if !errors.As(err, &ve) || ve.Code != transfer.CodeInvalidMemo {
			t.Errorf("text memo %q: %v, want INVALID_MEMO", v, err)
		}
	}
}

// RunQueued pays the item's request as read back from the store and never compares it with the
// fingerprint the item was accepted under. A reader that cannot see a field of the request (a
// submitter of the version before memos, during a deploy that updates the API function first; any
// later field the same way) reads an item accepted with a memo as one without it, pays it without
// the memo the exchange credits by, and its next whole-item write drops the memo for good. The
// item's own fingerprint tells: a request that does not fingerprint as its item was accepted must
// never be built or sent (retried, or left in place for a reader that can read it).
func TestRunQueuedPaysOnlyTheRequestItsItemFingerprints(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	in := input("async-memo-0001", "5")
	in.Request.Memo = transfer.Memo{Type: transfer.MemoID, Value: "1234567"}
	if _, err := h.orch.Enqueue(ctx, in); err != nil {
		t.Fatal(err)
	}
	rec := h.item(t, in.ClientKey)
	if rec.Fingerprint != in.Request.Fingerprint() {
		t.Fatal("the item is not fingerprinted as its request")
	}
	// The item as a reader blind to the memo sees it: the same item, fingerprint and all, no memo.
	blind := rec
	blind.Request.Memo = transfer.Memo{}
	h.store.Put(blind)
	d, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	if prepares, sends := h.ledger.counts(); prepares != 0 || sends != 0 {
		t.Fatalf("RunQueued = %s, %v: %d envelopes built and %d sent for a request that is not the one accepted (its memo lost)", d, err, prepares, sends)
	}
}

// A wallet address is "56 (or 69) characters of A-Z and 2-7, any case" (CanonicalWallet,
// ParseWallet), checked before it is decoded. Both upper-case the text with strings.ToUpper before
// that check, and Unicode upper-cases U+017F (long s) to S and U+0131 (dotless i) to I, so a
// string that is not an address in any case is taken as one: a look-alike another reader (a log
// search, the client's own records, a proxy's allow list) does not see as that address.
func TestWalletAddressIsASCIIBeforeItIsUpperCased(t *testing.T) {
	rules := muxedRules()
	lookalike := func(s string) string {
		r := []rune(strings.ToLower(s))
		for i, c := range r {
			switch c {
			case 's':
				r[i] = 'ſ'
				return string(r)
			case 'i':
				r[i] = 'ı'
				return string(r)
			}
		}
		t.Fatalf("%s has no S or I", s)
		return ""
	}
	for _, w := range []string{muxed1, wallet} {
		raw := lookalike(w)
		got, err := rules.ParseWallet(raw)
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != transfer.CodeInvalidAddress {
			t.Errorf("ParseWallet(%q) = %+v, %v; want INVALID_ADDRESS", raw, got, err)
		}
	}
}

// A muxed wallet reaches only its own transfers (doc.go, "Muxed wallets"): another M... of the
// same account, under the same key, neither reads, cancels nor replays it, whatever the spelling
// of its address; the account and the M... itself do. (Held: a regression guard.)
func TestMuxedWalletReachesNoOtherMuxedTransfer(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	rules := muxedRules()
	req, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: strings.ToLower(muxed1), Amount: "5", Asset: "USDC",
		Memo: &transfer.RawMemo{Type: "id", Value: "0042"}})
	if err != nil {
		t.Fatal(err)
	}
	in := transfer.Input{ClientKey: "payout-0001", Request: req}
	if _, err := h.orch.Enqueue(ctx, in); err != nil {
		t.Fatal(err)
	}
	m1, _ := rules.ParseWallet(muxed1)
	m2, _ := rules.ParseWallet(strings.ToLower(muxed2))
	if _, err := h.orch.View(ctx, m2, in.ClientKey); !errors.As(err, new(*transfer.NotFoundError)) {
		t.Errorf("View by another M... = %v, want not found", err)
	}
	if _, err := h.orch.Cancel(ctx, m2, in.ClientKey, transfer.Canceller{Caller: "x"}); !errors.As(err, new(*transfer.NotFoundError)) {
		t.Errorf("Cancel by another M... = %v, want not found", err)
	}
	other := req
	other.WalletAddress, other.MuxedID = muxed2, 2
	if _, err := h.orch.Enqueue(ctx, transfer.Input{ClientKey: in.ClientKey, Request: other}); !errors.As(err, new(*transfer.ConflictError)) {
		t.Errorf("Enqueue by another M... under the key = %v, want a conflict", err)
	}
	if v, err := h.orch.View(ctx, m1, in.ClientKey); err != nil || v.Memo.Value != "42" || v.Wallet != m1 {
		t.Errorf("View by the M... = %+v, %v", v, err)
	}
	if v, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, in.ClientKey); err != nil || v.Wallet != m1 {
		t.Errorf("View by the account = %+v, %v", v, err)
	}
	if rec, _ := h.store.Item(transfer.StoreKey(wallet, in.ClientKey)); rec.Status != transfer.StatusQueued {
		t.Errorf("the item moved: %+v", rec)
	}
}
