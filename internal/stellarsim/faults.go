package stellarsim

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Fault kinds. The submission kinds act on the next Count submissions
// (sendTransaction, POST /transactions, POST /transactions_async); stall and
// retention act on the ledger; read_order, db_lag and instances on what RPC
// and Horizon show (readview.go).
const (
	FaultRefuse         = "refuse"          // close the connection without an answer; nothing accepted
	FaultDropResponse   = "drop_response"   // accept (it will land), then close the connection without an answer
	FaultDelay          = "delay"           // accept as usual, answer after Delay
	FaultAnswer         = "answer"          // answer Status / Code / HTTPStatus without accepting
	FaultDropEnvelope   = "drop_envelope"   // answer PENDING, but evict the tx from the queue: it never lands
	FaultDelayInclusion = "delay_inclusion" // accepted tx is included Ledgers ledgers later than it would be
	FaultStall          = "stall"           // the next Count close attempts close nothing (Count 0: until cleared)
	FaultRetention      = "retention"       // shrink the getTransaction history window to Ledgers

	// Read faults: how RPC and Horizon read what they have ingested.

	// FaultReadOrder is stellar-rpc's read order during ingestion
	// (cmd/stellar-rpc/internal/methods/get_transaction.go, GetTransaction:
	// "Read txn first before checking latest ledger cache"): the transaction
	// is looked up before the ledger range, so a lookup racing the
	// ingestion of ledger L answers NOT_FOUND with latestLedger L although
	// the transaction is in L. The next Count getTransaction calls for a
	// transaction in the latest ledger the answering instance shows do so;
	// with Ledgers n, for a transaction in any of the latest n+1 ledgers, as
	// when RPC catches up and ingests several ledgers between the two reads.
	FaultReadOrder = "read_order"
	// FaultDBLag is RPC's database trailing its core until cleared:
	// getLatestLedger, getHealth, getTransaction and sendTransaction's
	// latestLedger come from a database Ledgers behind, while
	// getLedgerEntries reads core's latest ledger (so it is ahead of
	// getTransaction).
	FaultDBLag = "db_lag"
	// FaultInstances puts Instances instances (default 3) behind one URL
	// until cleared, for API "rpc", "horizon" or both: each request is
	// answered by the next one round-robin, instance i lagging
	// i/(Instances-1) x Delay behind the network's own visibility lag.
	FaultInstances = "instances"
)

// Fault is one injected failure. JSON field names are the admin API's
// (POST /_sim/faults); "delay" takes a Go duration string ("1.5s") or a number
// of milliseconds.
type Fault struct {
	Kind  string `json:"kind"`
	Count int    `json:"count,omitempty"` // submissions (or close attempts) it applies to; 0 means 1 (stall: until cleared)
	// Delay is how long FaultDelay holds the answer.
	Delay time.Duration `json:"-"`
	// Status for FaultAnswer: TRY_AGAIN_LATER, ERROR, PENDING or DUPLICATE.
	// POST /transactions maps TRY_AGAIN_LATER to 503, ERROR to 400
	// transaction_failed, and treats PENDING/DUPLICATE as accepted-looking
	// (it then waits and times out with 504, since nothing was queued).
	Status string `json:"status,omitempty"`
	// Code for FaultAnswer: a tx-level code such as "txBAD_SEQ" (or
	// "tx_bad_seq"); Code alone implies Status ERROR; ERROR without Code
	// uses txINTERNAL_ERROR.
	Code string `json:"code,omitempty"`
	// HTTPStatus for FaultAnswer (429, 500, 504, ...; 400 to 599): Horizon and
	// RPC answer with that HTTP status, RPC with no JSON-RPC body. It goes
	// alone: a fault with Status or Code too is refused.
	HTTPStatus int `json:"http_status,omitempty"`
	// Ledgers: K for delay_inclusion, the window for retention.
	Ledgers int `json:"ledgers,omitempty"`
	// API restricts a submission fault (or instances) to "rpc" or
	// "horizon"; empty means both.
	API string `json:"api,omitempty"`
	// Instances for FaultInstances: how many instances answer (2 or more).
	Instances int `json:"instances,omitempty"`
}

type faultJSON struct {
	Kind       string          `json:"kind"`
	Count      int             `json:"count,omitempty"`
	Delay      json.RawMessage `json:"delay,omitempty"`
	Status     string          `json:"status,omitempty"`
	Code       string          `json:"code,omitempty"`
	HTTPStatus int             `json:"http_status,omitempty"`
	Ledgers    int             `json:"ledgers,omitempty"`
	API        string          `json:"api,omitempty"`
	Instances  int             `json:"instances,omitempty"`
}

// MarshalJSON writes Delay as a Go duration string.
func (f Fault) MarshalJSON() ([]byte, error) {
	j := faultJSON{Kind: f.Kind, Count: f.Count, Status: f.Status, Code: f.Code,
		HTTPStatus: f.HTTPStatus, Ledgers: f.Ledgers, API: f.API, Instances: f.Instances}
	if f.Delay != 0 {
		j.Delay, _ = json.Marshal(f.Delay.String())
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads Delay as a duration string or milliseconds.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*f = Fault{Kind: j.Kind, Count: j.Count, Status: j.Status, Code: j.Code,
		HTTPStatus: j.HTTPStatus, Ledgers: j.Ledgers, API: j.API, Instances: j.Instances}
	if len(j.Delay) > 0 && string(j.Delay) != "null" {
		var s string
		if err := json.Unmarshal(j.Delay, &s); err == nil {
			d, err := time.ParseDuration(s)
			if err != nil {
				return fmt.Errorf("delay: %w", err)
			}
			f.Delay = d
		} else {
			var ms float64
			if err := json.Unmarshal(j.Delay, &ms); err != nil {
				return fmt.Errorf("delay: want a duration string or milliseconds: %w", err)
			}
			f.Delay = time.Duration(ms * float64(time.Millisecond))
		}
	}
	return nil
}

// validate checks a fault before it is armed.
func (f Fault) validate() error {
	switch f.Kind {
	case FaultRefuse, FaultDropResponse, FaultDropEnvelope, FaultStall:
	case FaultDelay:
		if f.Delay <= 0 {
			return fmt.Errorf("delay fault needs a positive delay")
		}
	case FaultAnswer:
		if f.Status == "" && f.HTTPStatus == 0 && f.Code == "" {
			return fmt.Errorf("answer fault needs status, code or http_status")
		}
		switch f.Status {
		case "", StatusPending, StatusDuplicate, StatusTryAgainLater, StatusError:
		default:
			return fmt.Errorf("answer status must be PENDING, DUPLICATE, TRY_AGAIN_LATER or ERROR, got %q", f.Status)
		}
		// One answer: an HTTP status is an answer without a body, a status (or code) one with a
		// body, so a fault naming both would answer one API one way and the other another.
		if f.HTTPStatus != 0 && (f.Status != "" || f.Code != "") {
			return fmt.Errorf("answer fault takes one of status, code or http_status: http_status %d answers without a body, so it goes alone", f.HTTPStatus)
		}
		if f.HTTPStatus != 0 && (f.HTTPStatus < 400 || f.HTTPStatus > 599) {
			return fmt.Errorf("answer http_status must be an HTTP error status (400 to 599), got %d", f.HTTPStatus)
		}
		if f.Code != "" && f.Status != "" && f.Status != StatusError {
			return fmt.Errorf("answer code %q is a result code of status ERROR (alone it means ERROR), not of %s", f.Code, f.Status)
		}
		if f.Code != "" {
			if _, ok := ParseTxCode(f.Code); !ok {
				return fmt.Errorf("unknown tx code %q", f.Code)
			}
		}
	case FaultDelayInclusion:
		if f.Ledgers <= 0 {
			return fmt.Errorf("delay_inclusion fault needs ledgers > 0")
		}
	case FaultRetention:
		if f.Ledgers <= 0 {
			return fmt.Errorf("retention fault needs ledgers > 0")
		}
	case FaultReadOrder, FaultDBLag:
		if f.API == "horizon" {
			return fmt.Errorf("%s is a fault of stellar-rpc: api must be rpc or empty", f.Kind)
		}
		if f.Kind == FaultDBLag && f.Ledgers <= 0 {
			return fmt.Errorf("db_lag fault needs ledgers > 0")
		}
	case FaultInstances:
		if f.Instances == 1 || f.Instances < 0 {
			return fmt.Errorf("instances fault needs 2 or more instances (0: 3)")
		}
		if f.Delay <= 0 {
			return fmt.Errorf("instances fault needs a positive delay (the slowest instance's extra lag)")
		}
	default:
		return fmt.Errorf("unknown fault kind %q", f.Kind)
	}
	switch f.API {
	case "", "rpc", "horizon":
	default:
		return fmt.Errorf("api must be rpc, horizon or empty, got %q", f.API)
	}
	if f.Count < 0 {
		return fmt.Errorf("count must be >= 0")
	}
	switch f.Kind {
	case FaultRetention, FaultDBLag, FaultInstances:
		if f.Count != 0 {
			return fmt.Errorf("%s takes no count: it lasts until healed (DELETE /_sim/faults)", f.Kind)
		}
	}
	return nil
}

// armedFault is a fault with its remaining uses.
type armedFault struct {
	Fault
	remaining int // -1: until cleared
}

// submissionFaults is what applies to one submission, taken from the armed list.
type submissionFaults struct {
	refuse         bool
	dropResponse   bool
	delay          time.Duration
	answer         *Fault
	dropEnvelope   bool
	delayInclusion int
	names          []string
}

// takeSubmissionFaults consumes one use of the first armed fault of each
// submission kind that matches api, so different kinds stack (delay +
// drop_response) while faults of one kind are used one after the other.
// Callers hold n.mu.
func (n *Network) takeSubmissionFaults(api string) submissionFaults {
	var sf submissionFaults
	used := map[string]bool{} // one fault of each kind per submission, in arming order
	kept := n.faults[:0]
	for _, f := range n.faults {
		if !isSubmissionFault(f.Kind) {
			kept = append(kept, f)
			continue
		}
		if (f.API != "" && f.API != api) || used[f.Kind] {
			kept = append(kept, f)
			continue
		}
		used[f.Kind] = true
		switch f.Kind {
		case FaultRefuse:
			sf.refuse = true
		case FaultDropResponse:
			sf.dropResponse = true
		case FaultDelay:
			sf.delay += f.Delay
		case FaultAnswer:
			if sf.answer == nil {
				fc := f.Fault
				sf.answer = &fc
			}
		case FaultDropEnvelope:
			sf.dropEnvelope = true
		case FaultDelayInclusion:
			sf.delayInclusion += f.Ledgers
		}
		sf.names = append(sf.names, f.Kind)
		f.remaining--
		if f.remaining != 0 {
			kept = append(kept, f)
		}
	}
	n.faults = kept
	return sf
}

// InjectFault arms a fault; an invalid one is not armed and its error returned.
func (n *Network) InjectFault(f Fault) error { return n.AddFault(f) }

// AddFault is InjectFault.
func (n *Network) AddFault(f Fault) error {
	if err := f.validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if f.Kind == FaultRetention {
		n.retention = uint32(f.Ledgers)
		return nil
	}
	if f.Kind == FaultInstances && f.Instances == 0 {
		f.Instances = 3
	}
	rem := f.Count
	switch {
	case f.Kind == FaultDBLag || f.Kind == FaultInstances:
		rem = -1 // until cleared
	case rem == 0:
		rem = 1
		if f.Kind == FaultStall {
			rem = -1
		}
	}
	n.faults = append(n.faults, &armedFault{Fault: f, remaining: rem})
	return nil
}

// ClearFaults disarms every fault and restores the configured retention window.
func (n *Network) ClearFaults() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.faults = nil
	n.retention = n.opts.RetentionLedgers
}

// Faults lists the armed faults with their remaining uses in Count (-1: until cleared).
func (n *Network) Faults() []Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]Fault, 0, len(n.faults))
	for _, f := range n.faults {
		c := f.Fault
		c.Count = f.remaining
		out = append(out, c)
	}
	return out
}

// takeStall consumes one stalled close attempt, reporting whether closing is stalled.
func (n *Network) takeStall() bool {
	return n.takeFirst(func(f *armedFault) bool { return f.Kind == FaultStall })
}

// takeFirst consumes one use of the first armed fault that match accepts (a fault of Count 0 is
// never used up), reporting whether there was one. Callers hold n.mu.
func (n *Network) takeFirst(match func(*armedFault) bool) bool {
	for i, f := range n.faults {
		if !match(f) {
			continue
		}
		if f.remaining > 0 {
			f.remaining--
			if f.remaining == 0 {
				n.faults = append(n.faults[:i], n.faults[i+1:]...)
			}
		}
		return true
	}
	return false
}

func isSubmissionFault(kind string) bool {
	switch kind {
	case FaultStall, FaultRetention, FaultReadOrder, FaultDBLag, FaultInstances:
		return false
	}
	return true
}

// armedFor is the first armed fault of kind that applies to api ("rpc" or
// "horizon"), or nil. Callers hold n.mu.
func (n *Network) armedFor(kind, api string) *armedFault {
	for _, f := range n.faults {
		if f.Kind == kind && (f.API == "" || f.API == api) {
			return f
		}
	}
	return nil
}

// takeReadOrder consumes one use of an armed read_order fault that covers a
// transaction in ledger txLedger while the answering instance shows latest,
// reporting whether there was one. Callers hold n.mu.
func (n *Network) takeReadOrder(txLedger, latest uint32) bool {
	return n.takeFirst(func(f *armedFault) bool {
		return f.Kind == FaultReadOrder && latest-txLedger <= uint32(max(f.Ledgers, 0))
	})
}

// DisarmFaults disarms every armed fault of the given kinds (not retention,
// which is a window: set it again, or ClearFaults) and returns them as they
// were, Count being their remaining uses (-1: until cleared). The fault
// campaign uses it to end a wave's read faults without touching the others.
func (n *Network) DisarmFaults(kinds ...string) []Fault {
	n.mu.Lock()
	defer n.mu.Unlock()
	var removed []Fault
	kept := n.faults[:0]
	for _, f := range n.faults {
		if slices.Contains(kinds, f.Kind) {
			c := f.Fault
			c.Count = f.remaining
			removed = append(removed, c)
			continue
		}
		kept = append(kept, f)
	}
	clear(n.faults[len(kept):])
	n.faults = kept
	return removed
}
