package stellarsim

import (
	"net/http"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// Submission statuses, as stellar-core / stellar-rpc name them.
const (
	StatusPending       = "PENDING"
	StatusDuplicate     = "DUPLICATE"
	StatusTryAgainLater = "TRY_AGAIN_LATER"
	StatusError         = "ERROR"
	// StatusNoResponse is recorded when a fault closed the connection unanswered.
	StatusNoResponse = "NO_RESPONSE"
	// StatusInvalid is recorded for envelopes whose XDR could not be decoded.
	StatusInvalid = "INVALID"
)

// ReceivedEnvelope is one envelope submitted over RPC or Horizon and what it
// was answered.
type ReceivedEnvelope struct {
	At           time.Time `json:"at"`  // clock time of receipt
	API          string    `json:"api"` // rpc, horizon, horizon_async
	Hash         string    `json:"hash,omitempty"`
	InnerHash    string    `json:"inner_hash,omitempty"`
	Source       string    `json:"source,omitempty"`
	Sequence     int64     `json:"sequence,string,omitempty"`
	LatestLedger uint32    `json:"latest_ledger"`
	Status       string    `json:"status"`         // PENDING, DUPLICATE, TRY_AGAIN_LATER, ERROR, NO_RESPONSE, INVALID
	Code         string    `json:"code,omitempty"` // tx-level code for ERROR, e.g. txBAD_SEQ or txFEE_BUMP_INNER_FAILED/txTOO_LATE
	HTTPStatus   int       `json:"http_status,omitempty"`
	Accepted     bool      `json:"accepted"` // entered the queue (or was evicted by drop_envelope right after)
	Faults       []string  `json:"faults,omitempty"`
	Outcome      string    `json:"outcome,omitempty"` // later fate: included / dropped / evicted / replaced
	EnvelopeXDR  string    `json:"envelope_xdr"`
}

// submission is the network's verdict on one envelope.
type submission struct {
	tx        *txInfo
	status    string
	errResult *xdr.TransactionResult
	errCode   xdr.TransactionResultCode
	faults    submissionFaults
	latest    LedgerInfo
	rec       *ReceivedEnvelope
}

// submit runs one envelope through faults and the queue's acceptance rules.
// api is "rpc", "horizon" or "horizon_async". A nil submission and a non-nil
// error mean the XDR was unusable (nothing consumed, envelope recorded INVALID).
func (n *Network) submit(api, b64 string) (*submission, error) {
	t, decErr := safeDecode(b64, n.passphrase)

	n.mu.Lock()
	defer n.mu.Unlock()
	latest := n.latestLocked()
	rec := &ReceivedEnvelope{At: n.clock.Now().UTC(), API: api, EnvelopeXDR: b64, LatestLedger: latest.Sequence}
	n.envelopes = append(n.envelopes, rec)
	if decErr != nil {
		rec.Status = StatusInvalid
		return nil, decErr
	}
	rec.Hash, rec.InnerHash, rec.Source, rec.Sequence = t.fullHash, t.innerHash, t.source, t.seq

	group := "rpc"
	if api != "rpc" {
		group = "horizon"
	}
	s := &submission{tx: t, latest: latest, rec: rec}
	s.faults = n.takeSubmissionFaults(group)
	rec.Faults = s.faults.names
	switch {
	case s.faults.refuse:
		s.status = StatusNoResponse
	case s.faults.answer != nil:
		n.fakeAnswer(s, *s.faults.answer)
	default:
		n.acceptLocked(s)
	}
	rec.Status = s.status
	if s.errResult != nil {
		rec.Code = TxCodeName(s.errCode)
		if s.errResult.Result.InnerResultPair != nil {
			rec.Code += "/" + TxCodeName(s.errResult.Result.InnerResultPair.Result.Result.Code)
		}
	}
	if s.faults.dropResponse {
		rec.Status = StatusNoResponse
	}
	return s, nil
}

func safeDecode(b64, passphrase string) (t *txInfo, err error) {
	defer func() {
		if r := recover(); r != nil {
			t, err = nil, errPanicDecode
		}
	}()
	return decodeEnvelope(b64, passphrase)
}

// fakeAnswer fills s from an answer fault, accepting nothing.
func (n *Network) fakeAnswer(s *submission, f Fault) {
	s.status = f.Status
	if s.status == "" && f.Code != "" {
		s.status = StatusError
	}
	if s.status == StatusError {
		code := xdr.TransactionResultCodeTxInternalError
		if c, ok := ParseTxCode(f.Code); ok {
			code = c
		}
		r := simpleResult(n.chargedFee(s.tx), code, nil)
		s.errResult, s.errCode = &r, code
	}
}

// errorResultXDR encodes the TransactionResult of an ERROR answer.
func (s *submission) errorResultXDR() string {
	if s.errResult == nil {
		return ""
	}
	b, err := xdr.MarshalBase64(*s.errResult)
	if err != nil {
		return ""
	}
	return b
}

// dropConnection closes the client's connection without any HTTP response.
func dropConnection(w http.ResponseWriter) {
	rc := http.NewResponseController(w)
	conn, _, err := rc.Hijack()
	if err != nil {
		// Not hijackable (HTTP/2): abort the handler so no response is completed.
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// waitDelay holds an answer for d, giving up early if the client goes away
// or the network closes.
func (n *Network) waitDelay(r *http.Request, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
	case <-n.stop:
	}
}

// Envelopes returns every envelope received, oldest first.
func (n *Network) Envelopes() []ReceivedEnvelope {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]ReceivedEnvelope, len(n.envelopes))
	for i, e := range n.envelopes {
		out[i] = *e
		out[i].Faults = append([]string(nil), e.Faults...)
	}
	return out
}

// Applied returns every transaction included in a ledger, in order.
func (n *Network) Applied() []AppliedTx {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]AppliedTx, len(n.applied))
	for i, a := range n.applied {
		out[i] = *a
		out[i].OpResults = append([]string(nil), a.OpResults...)
		out[i].Ops = append([]OpSummary(nil), a.Ops...)
	}
	return out
}

// Transaction returns the applied transaction with this inner or outer hash,
// regardless of the retention window.
func (n *Network) Transaction(hash string) (AppliedTx, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a, ok := n.byHash[hash]
	if !ok {
		return AppliedTx{}, false
	}
	return *a, true
}

// Queued reports how many accepted transactions wait for a ledger.
func (n *Network) Queued() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return len(n.queue)
}
