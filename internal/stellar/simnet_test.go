package stellar

import (
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// The local network these tests run on is the realistic one (stellarsim's defaults: protocol 26
// Soroban, core's TOO_LATE offset at submission, queue ageing), with the visibility lag set
// explicitly: RPC and Horizon show a ledger simLagMin..simLagMax after it closes, as their
// ingestion does. A test that closes a ledger and then reads what it holds moves its clock on by
// simLagMax first (closeShown), as a client on the real network waits for the ledger to be
// ingested.
const (
	simLagMin = 1 * time.Second
	simLagMax = 3 * time.Second
)

// simOptions is the local network of these tests on clock.
func simOptions(clock stellarsim.Clock) stellarsim.Options {
	return stellarsim.Options{Clock: clock, VisibilityLagMin: simLagMin, VisibilityLagMax: simLagMax}
}

// closeShown closes a ledger on n and moves the clock on by simLagMax, so that RPC and Horizon
// show it; it returns the closed ledger.
func closeShown(n *stellarsim.Network, advance func(time.Duration)) stellarsim.LedgerInfo {
	closed := n.CloseLedger()
	advance(simLagMax)
	return closed
}
