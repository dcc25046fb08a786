package stellarsim

import (
	"time"
)

// This file is the ledger chain as time sees it: when each ledger closed, when
// RPC and Horizon show it, and what the ledger entries were before each recent
// ledger, so a lagging reader can be answered as of the ledger it has ingested.

// Visibility lag defaults. stellar-rpc and Horizon ingest a ledger from their
// captive core after core has closed it, each ledger in one database
// transaction (stellar-rpc cmd/stellar-rpc/internal/ingest/service.go,
// Service.ingest; stellar-horizon internal/ingest/processor_runner.go,
// ProcessorRunner.RunAllProcessorsOnLedger), typically 1 to 3 s later on
// pubnet, minutes while catching up.
const (
	defaultLagMin        = 1 * time.Second
	defaultLagMax        = 3 * time.Second
	defaultExpectedClose = 5 * time.Second
	// undoDepth is how many recent ledgers keep their undo log: reads lagging
	// further than that see the current entries.
	undoDepth = 4096
)

// LatestLedger returns the last closed ledger (core's view: RPC and Horizon
// may not show it yet, see VisibleLedger).
func (n *Network) LatestLedger() LedgerInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.latestLocked()
}

// VisibleLedger returns the latest ledger RPC and Horizon show now (without
// faults): the last closed ledger whose visibility lag has passed.
func (n *Network) VisibleLedger() LedgerInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ledgerInfo(n.visibleLocked(0))
}

func (n *Network) latestLocked() LedgerInfo {
	return n.ledgerInfo(uint32(len(n.closeTimes)))
}

func (n *Network) ledgerInfo(seq uint32) LedgerInfo {
	return LedgerInfo{Sequence: seq, CloseTime: time.Unix(n.closeTimeOf(seq), 0).UTC()}
}

func (n *Network) closeTimeOf(seq uint32) int64 {
	if seq == 0 || int(seq) > len(n.closeTimes) {
		return 0
	}
	return n.closeTimes[seq-1]
}

// oldestAt is the first ledger still inside the history window of a reader
// whose latest ledger is latest.
func (n *Network) oldestAt(latest uint32) uint32 {
	if n.retention == 0 || latest < n.retention {
		return 1
	}
	return latest - n.retention + 1
}

// nextCloseTime is the close time the next ledger will get if closed now:
// wall (or injected) clock, at least one second after the previous ledger.
func (n *Network) nextCloseTime() int64 {
	prev := n.closeTimes[len(n.closeTimes)-1]
	return max(n.clock.Now().Unix(), prev+1)
}

// visibleLocked is the latest ledger an ingesting reader extra behind the
// default one has taken in by now. The genesis ledger is always visible.
func (n *Network) visibleLocked(extra time.Duration) uint32 {
	now := n.clock.Now()
	seq := uint32(len(n.closeTimes))
	for seq > 1 && n.visibleAt[seq-1].Add(extra).After(now) {
		seq--
	}
	return seq
}

// visibilityLag is ledger seq's lag, picked in [VisibilityLagMin,
// VisibilityLagMax] by a hash of the seed and the sequence (SplitMix64), so
// it is the same on every run.
func (n *Network) visibilityLag(seq uint32) time.Duration {
	if n.opts.NoVisibilityLag {
		return 0
	}
	lo, hi := n.opts.VisibilityLagMin, n.opts.VisibilityLagMax
	if hi <= lo {
		return lo
	}
	z := n.opts.VisibilitySeed + uint64(seq)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	span := uint64(hi-lo)/uint64(time.Millisecond) + 1
	return lo + time.Duration(z%span)*time.Millisecond
}

// undoLog holds the entries a ledger changed as they were before it; a nil
// value means the entry did not exist.
type undoLog struct {
	accounts   map[string]*account
	trustlines map[tlKey]*trustline
}

// undoLogs are the undo logs of recent ledgers, by sequence.
type undoLogs map[uint32]*undoLog

func (u undoLogs) at(seq uint32) *undoLog {
	l := u[seq]
	if l == nil {
		l = &undoLog{accounts: map[string]*account{}, trustlines: map[tlKey]*trustline{}}
		u[seq] = l
		delete(u, seq-undoDepth)
	}
	return l
}

// saveAccount records id's state before ledger seq changes it (once per ledger).
func (n *Network) saveAccount(seq uint32, id string) {
	saveOnce(n.undo.at(seq).accounts, n.state.accounts, id)
}

// saveTrustline records k's state before ledger seq changes it (once per ledger).
func (n *Network) saveTrustline(seq uint32, k tlKey) {
	saveOnce(n.undo.at(seq).trustlines, n.state.trustlines, k)
}

// saveOnce copies cur[k] into saved unless saved already holds k: nil for an entry that did not
// exist, else a copy of it as it was.
func saveOnce[K comparable, V any](saved, cur map[K]*V, k K) {
	if _, ok := saved[k]; ok {
		return
	}
	var old *V
	if v := cur[k]; v != nil {
		c := *v
		old = &c
	}
	saved[k] = old
}

// accountAt is id's account entry as of ledger seq (nil if absent then).
func (n *Network) accountAt(id string, seq uint32) *account {
	a := n.state.accounts[id]
	for s := uint32(len(n.closeTimes)); s > seq; s-- {
		if l := n.undo[s]; l != nil {
			if old, ok := l.accounts[id]; ok {
				a = old
			}
		}
	}
	return a
}

func (n *Network) trustlineAt(k tlKey, seq uint32) *trustline {
	t := n.state.trustlines[k]
	for s := uint32(len(n.closeTimes)); s > seq; s-- {
		if l := n.undo[s]; l != nil {
			if old, ok := l.trustlines[k]; ok {
				t = old
			}
		}
	}
	return t
}

// trustlinesAt lists account's trustlines as of ledger seq.
func (n *Network) trustlinesAt(id string, seq uint32) map[tlKey]*trustline {
	keys := map[tlKey]bool{}
	for k := range n.state.trustlines {
		if k.account == id {
			keys[k] = true
		}
	}
	for s := uint32(len(n.closeTimes)); s > seq; s-- {
		if l := n.undo[s]; l != nil {
			for k := range l.trustlines {
				if k.account == id {
					keys[k] = true
				}
			}
		}
	}
	out := map[tlKey]*trustline{}
	for k := range keys {
		if t := n.trustlineAt(k, seq); t != nil {
			out[k] = t
		}
	}
	return out
}

// LedgerInfo identifies one closed ledger.
type LedgerInfo struct {
	Sequence  uint32
	CloseTime time.Time
}
