package stellarsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// adminRoutes serves the /_sim/ API, for tools outside Go:
//
//	POST   /_sim/faults        {"kind": "...", "count": N, ...} or a JSON array of them
//	GET    /_sim/faults        armed faults (count = remaining uses, -1 until cleared)
//	DELETE /_sim/faults        clear every fault, restore the retention window
//	GET    /_sim/transactions  every applied transaction
//	GET    /_sim/envelopes     every envelope received and what it was answered
//	POST   /_sim/close         close one ledger now
//	GET    /_sim/ledger        the latest ledger
func (n *Network) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /_sim/faults", n.adminAddFaults)
	mux.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": n.Faults()})
	})
	mux.HandleFunc("DELETE /_sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		n.ClearFaults()
		writeJSON(w, http.StatusOK, map[string]any{"faults": []Fault{}})
	})
	mux.HandleFunc("GET /_sim/transactions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"transactions": n.Applied()})
	})
	mux.HandleFunc("GET /_sim/envelopes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"envelopes": n.Envelopes()})
	})
	mux.HandleFunc("POST /_sim/close", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, ledgerJSON(n.CloseLedger()))
	})
	mux.HandleFunc("GET /_sim/ledger", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, ledgerJSON(n.LatestLedger()))
	})
}

func ledgerJSON(l LedgerInfo) map[string]any {
	return map[string]any{"sequence": l.Sequence, "close_time": l.CloseTime.Format(time.RFC3339)}
}

func (n *Network) adminAddFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("reading body: %w", err))
		return
	}
	body = bytes.TrimSpace(body)
	var faults []Fault
	if len(body) > 0 && body[0] == '[' {
		err = json.Unmarshal(body, &faults)
	} else {
		var f Fault
		err = json.Unmarshal(body, &f)
		faults = []Fault{f}
	}
	if err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("decoding fault: %w", err))
		return
	}
	for _, f := range faults {
		if err := f.validate(); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
	}
	for _, f := range faults {
		_ = n.AddFault(f)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"faults": n.Faults()})
}

func adminError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
