package stellarsim

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Horizon's submission endpoints: POST /transactions (synchronous) and POST /transactions_async.

// readTx reads the "tx" form field (or a JSON {"tx": ...} body).
func readTx(r *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return ""
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var j struct {
			Tx string `json:"tx"`
		}
		_ = json.Unmarshal(body, &j)
		return j.Tx
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return ""
	}
	return v.Get("tx")
}

// horizonTransport applies connection faults and answer-by-HTTP-status.
// It reports whether the response has been dealt with.
func (n *Network) horizonTransport(w http.ResponseWriter, r *http.Request, s *submission) bool {
	if s.faults.refuse {
		dropConnection(w)
		return true
	}
	n.waitDelay(r, s.faults.delay)
	if s.faults.dropResponse {
		dropConnection(w)
		return true
	}
	if a := s.faults.answer; a != nil && a.HTTPStatus != 0 {
		n.noteHTTPStatus(s, a.HTTPStatus)
		writeProblem(w, problemForStatus(a.HTTPStatus))
		return true
	}
	return false
}

func (n *Network) noteHTTPStatus(s *submission, status int) {
	n.mu.Lock()
	s.rec.HTTPStatus = status
	n.mu.Unlock()
}

// hSubmit is the synchronous POST /transactions: it waits for the
// transaction to be included (up to HorizonSubmitTimeout, then 504), and
// answers an envelope already in history with its stored result at once.
func (n *Network) hSubmit(w http.ResponseWriter, r *http.Request) {
	b64 := readTx(r)
	s, err := n.submit("horizon", b64)
	if err != nil {
		writeProblem(w, problemMalformed)
		return
	}
	if n.horizonTransport(w, r, s) {
		return
	}
	if s.status == StatusTryAgainLater || s.status == StatusError {
		// A re-send of an envelope that already landed is answered from history.
		if a, ok := n.Transaction(s.tx.fullHash); ok && s.faults.answer == nil {
			n.respondApplied(w, r, s, &a)
			return
		}
	}
	switch s.status {
	case StatusError:
		n.noteHTTPStatus(s, http.StatusBadRequest)
		writeProblem(w, txFailedProblem(b64, *s.errResult))
		return
	case StatusTryAgainLater:
		n.noteHTTPStatus(s, http.StatusServiceUnavailable)
		writeProblem(w, problemTryAgainLater)
		return
	}
	timeout := time.NewTimer(n.opts.HorizonSubmitTimeout)
	defer timeout.Stop()
	for {
		n.mu.Lock()
		a := n.byHash[s.tx.fullHash]
		closed := n.ledgerClosed
		n.mu.Unlock()
		if a != nil {
			c := *a
			n.respondApplied(w, r, s, &c)
			return
		}
		select {
		case <-closed:
		case <-timeout.C:
			n.noteHTTPStatus(s, http.StatusGatewayTimeout)
			writeProblem(w, problemTimeout)
			return
		case <-r.Context().Done():
			return
		case <-n.stop:
			writeProblem(w, problemForStatus(http.StatusServiceUnavailable))
			return
		}
	}
}

func (n *Network) respondApplied(w http.ResponseWriter, r *http.Request, s *submission, a *AppliedTx) {
	if a.Status == "SUCCESS" {
		n.noteHTTPStatus(s, http.StatusOK)
		writeHAL(w, http.StatusOK, n.horizonTx(n.links(r), a, s.tx.fullHash))
		return
	}
	var res xdr.TransactionResult
	_ = xdr.SafeUnmarshalBase64(a.ResultXDR, &res)
	n.noteHTTPStatus(s, http.StatusBadRequest)
	writeProblem(w, txFailedProblem(s.tx.envXDR, res))
}

// hSubmitAsync is POST /transactions_async: core's answer, mapped to
// 201 PENDING, 409 DUPLICATE, 503 TRY_AGAIN_LATER, 400 ERROR.
func (n *Network) hSubmitAsync(w http.ResponseWriter, r *http.Request) {
	s, err := n.submit("horizon_async", readTx(r))
	if err != nil {
		writeProblem(w, problemMalformed)
		return
	}
	if n.horizonTransport(w, r, s) {
		return
	}
	resp := hProtocol.AsyncTransactionSubmissionResponse{TxStatus: s.status, Hash: s.tx.fullHash, ErrorResultXDR: s.errorResultXDR()}
	status := resp.GetStatus()
	if status == 0 {
		status = http.StatusInternalServerError
	}
	n.noteHTTPStatus(s, status)
	writeJSON(w, status, resp)
}
