package transfer_test

import (
	"errors"
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
