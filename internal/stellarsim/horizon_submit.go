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

// hSubmit is the synchronous POST /transactions as Horizon's submission
// system answers it (stellar-horizon internal/txsub/system.go, System.Submit
// and System.Tick): from its own history, so that a GET /transactions/{hash}
// or /accounts/{id} right after a 200 already shows the transaction. Core's
// PENDING, DUPLICATE and TRY_AGAIN_LATER all leave the request open
// (submitter.go, Submit: a nil error) until the transaction is in the ledgers
// the instance that took the request has ingested, then it is answered 200
// (or 400 when it failed), or 504 after HorizonSubmitTimeout. A transaction
// its history already shows is answered from it at once. An ERROR is a 400
// at once, except txBAD_SEQ: Horizon first waits until its history shows
// the source account at the envelope's sequence number or has caught up with
// core (waitUntilAccountSequence, isSyncedUp), then answers from history if
// the transaction is there. The waits follow the network's own visibility of
// each ledger (awaitShown), never moving the clock.
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
	hash := s.tx.fullHash
	if a, ok := n.shownTx(r, hash); ok && s.faults.answer == nil {
		// Already in Horizon's history: System.Submit answers from it (txResultByHash) before
		// submitting to core.
		n.respondApplied(w, r, s, &a)
		return
	}
	timeout := time.NewTimer(n.opts.HorizonSubmitTimeout)
	defer timeout.Stop()
	if s.status == StatusError && s.errCode == xdr.TransactionResultCodeTxBadSeq && s.faults.answer == nil {
		caughtUp := n.awaitShown(r, timeout.C, func(shown uint32) bool {
			a := n.accountAt(s.tx.source, shown)
			return shown >= uint32(len(n.closeTimes)) || a != nil && a.seq >= s.tx.seq
		})
		if !caughtUp {
			n.waitFailed(w, r, s)
			return
		}
		if a, ok := n.shownTx(r, hash); ok {
			n.respondApplied(w, r, s, &a)
			return
		}
	}
	if s.status == StatusError {
		n.noteHTTPStatus(s, http.StatusBadRequest)
		writeProblem(w, txFailedProblem(b64, *s.errResult))
		return
	}
	var found *AppliedTx
	ok := n.awaitShown(r, timeout.C, func(shown uint32) bool {
		if a := n.byHash[hash]; a != nil && a.Ledger <= shown {
			c := *a
			found = &c
		}
		return found != nil
	})
	if !ok {
		n.waitFailed(w, r, s)
		return
	}
	n.respondApplied(w, r, s, found)
}

// waitFailed answers a synchronous submission whose wait ended without an
// answer: nothing to a client that left, 503 when the network closes, else
// Horizon's 504 timeout (txsub ErrTimeout).
func (n *Network) waitFailed(w http.ResponseWriter, r *http.Request, s *submission) {
	if r.Context().Err() != nil {
		return
	}
	select {
	case <-n.stop:
		writeProblem(w, problemForStatus(http.StatusServiceUnavailable))
	default:
		n.noteHTTPStatus(s, http.StatusGatewayTimeout)
		writeProblem(w, problemTimeout)
	}
}

// shownTx is the applied transaction with this hash if the Horizon instance
// that took r shows its ledger now.
func (n *Network) shownTx(r *http.Request, hash string) (AppliedTx, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a := n.byHash[hash]
	if a == nil || a.Ledger > n.horizonShownLocked(n.viewOf(r, "horizon")) {
		return AppliedTx{}, false
	}
	return *a, true
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
