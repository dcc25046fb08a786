package stellar

import "testing"

// TestAsyncAnswer: only the endpoint's own answer, with the HTTP status Horizon renders for its
// tx_status and a hash, is read as a submission status; anything else is an unexpected answer.
func TestAsyncAnswer(t *testing.T) {
	const h = `"hash":"2a57ab2bb0c3312ca0c4d7f9d7ad726b570ac6438fe45da574d1179fa97a989c"`
	for _, c := range []struct {
		status  int
		body    string
		want    string // tx_status, "" for an error
		wantXDR string
	}{
		{201, `{"tx_status":"PENDING",` + h + `}`, "PENDING", ""},
		{409, `{"tx_status":"DUPLICATE",` + h + `}`, "DUPLICATE", ""},
		{503, `{"tx_status":"TRY_AGAIN_LATER",` + h + `}`, "TRY_AGAIN_LATER", ""},
		{400, `{"tx_status":"ERROR",` + h + `,"error_result_xdr":"AAAA"}`, "ERROR", "AAAA"},
		{400, `{"tx_status":"ERROR",` + h + `,"errorResultXdr":"BBBB"}`, "ERROR", "BBBB"},
		{400, `{"tx_status":"ERROR",` + h + `,"error_result_xdr":"AAAA","errorResultXdr":"BBBB"}`, "ERROR", "AAAA"},
		{200, `{"tx_status":"PENDING",` + h + `}`, "", ""}, // not the status Horizon renders
		{503, `{"tx_status":"PENDING",` + h + `}`, "", ""}, // idem
		{201, `{"tx_status":"PENDING"}`, "", ""},           // no hash
		{201, `{"tx_status":"SUCCESS",` + h + `}`, "", ""}, // not one of core's four
		{503, `{"type":"https://stellar.org/horizon-errors/stale_history","title":"Historical DB Is Too Stale","status":503}`, "", ""},
		{503, `<html>Service Unavailable</html>`, "", ""},
		{400, ``, "", ""},
	} {
		r, err := asyncAnswer(c.status, []byte(c.body))
		if c.want == "" {
			if err == nil {
				t.Errorf("%d %s: %+v, want an error", c.status, c.body, r)
			}
			continue
		}
		if err != nil || r.TxStatus != c.want || r.ErrorResultXDR != c.wantXDR {
			t.Errorf("%d %s: %+v, %v; want %s %q", c.status, c.body, r, err, c.want, c.wantXDR)
		}
	}
	if _, err := asyncAnswer(201, make([]byte, maxAsyncAnswer+1)); err == nil {
		t.Error("an answer over the limit was read")
	}
}
