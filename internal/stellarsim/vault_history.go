package stellarsim

import (
	"sort"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// Contract entries as of an earlier ledger, for RPC readers that have not
// ingested the latest one (see history.go for the classic entries).

// saveLocked records the entry under key as it was before ledger changes it
// (once per ledger). Callers hold h.mu.
func (h *VaultHost) saveLocked(ledger uint32, key xdr.LedgerKey) {
	ks := keyString(key)
	l := h.undo[ledger]
	if l == nil {
		l = map[string]*contractEntry{}
		h.undo[ledger] = l
		h.undoSeqs = append(h.undoSeqs, ledger)
		if len(h.undoSeqs) > undoDepth {
			delete(h.undo, h.undoSeqs[0])
			h.undoSeqs = h.undoSeqs[1:]
		}
	}
	if _, ok := l[ks]; ok {
		return
	}
	var old *contractEntry
	if e := h.entries[ks]; e != nil {
		c := *e
		old = &c
	}
	l[ks] = old
}

// entryAtLocked is the entry under ks as of ledger at (nil if absent then).
func (h *VaultHost) entryAtLocked(ks string, at uint32) *contractEntry {
	e := h.entries[ks]
	i := sort.Search(len(h.undoSeqs), func(i int) bool { return h.undoSeqs[i] > at })
	for j := len(h.undoSeqs) - 1; j >= i; j-- {
		if old, ok := h.undo[h.undoSeqs[j]][ks]; ok {
			e = old
		}
	}
	return e
}
