package stellarsim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// This file decides, for each request to RPC or Horizon, which ledgers the
// answering instance has ingested: the visibility lag (history.go), and the
// instances, db_lag and read_order faults.

// readView is what one RPC or Horizon instance has ingested when it answers
// one HTTP request.
type readView struct {
	// latest is the latest ledger in its database: getLatestLedger,
	// getHealth, getTransaction, sendTransaction's latestLedger; Horizon's
	// ingested ledger.
	latest uint32
	// entries is the ledger getLedgerEntries reads at. stellar-rpc asks its
	// captive core for entries at its database's latest ledger
	// (cmd/stellar-rpc/internal/ledgerentries/main.go,
	// coreLedgerEntryGetter.GetLedgerEntries), so it is latest unless the
	// db_lag fault puts core ahead.
	entries uint32
	// instance is which instance answered (0 without the instances fault).
	instance int
	// served is the latest ledger this instance had shown in an earlier
	// answer: a read_order fault can hide only transactions of ledgers
	// ingested since (an instance never un-ingests what it has shown).
	served uint32
}

type readViewKey struct{}

// withReadView picks the instance that answers r and fixes what it shows.
func (n *Network) withReadView(r *http.Request, api string) *http.Request {
	n.mu.Lock()
	v := n.readViewLocked(api)
	n.mu.Unlock()
	return r.WithContext(context.WithValue(r.Context(), readViewKey{}, v))
}

// viewOf is the read view attached to r, or the default one (callers outside
// an HTTP request). Callers hold n.mu.
func (n *Network) viewOf(r *http.Request, api string) readView {
	if r != nil {
		if v, ok := r.Context().Value(readViewKey{}).(readView); ok {
			return v
		}
	}
	return n.readViewLocked(api)
}

// readViewLocked is the view of the next instance to answer for api ("rpc"
// or "horizon"). Callers hold n.mu.
func (n *Network) readViewLocked(api string) readView {
	var extra time.Duration
	inst := 0
	if f := n.armedFor(FaultInstances, api); f != nil {
		// A load balancer in front of f.Instances instances, each ingesting
		// at its own pace: instance i lags i/(k-1) of f.Delay more than the
		// network's own visibility lag. Requests go round-robin.
		k := f.Instances
		inst = int(n.instanceTurn[api] % uint64(k))
		n.instanceTurn[api]++
		extra = f.Delay * time.Duration(inst) / time.Duration(k-1)
	}
	v := readView{latest: n.visibleLocked(extra), instance: inst}
	v.entries = v.latest
	if n.served == nil {
		n.served = map[string]uint32{}
	}
	id := fmt.Sprintf("%s#%d", api, inst)
	v.served = n.served[id]
	n.served[id] = max(n.served[id], v.latest)
	if f := n.armedFor(FaultDBLag, api); f != nil && api == "rpc" {
		// RPC's database trails its core: entries come from core's latest
		// ledger, everything else from a database Ledgers behind.
		v.entries = uint32(len(n.closeTimes))
		v.latest = uint32(max(int64(v.latest)-int64(f.Ledgers), 1))
	}
	return v
}

// readViews wraps the network's handler so that every RPC and Horizon
// request carries the view of the instance that answers it.
func (n *Network) readViews(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/_sim/"), strings.HasPrefix(p, "/friendbot"):
		case p == "/rpc" || strings.HasPrefix(p, "/rpc/"):
			r = n.withReadView(r, "rpc")
		default:
			r = n.withReadView(r, "horizon")
		}
		h.ServeHTTP(w, r)
	})
}
