package stellar

import "github.com/stellar-transfer/orchestrator/internal/stellarsim"

// simLegacy keeps, for these tests, three kinder behaviours of the local network that issue 12
// replaced (stellarsim.Legacy), until the adapters are adapted to them:
//   - NoVisibilityLag: the suite and integration tests and the contract tests that stall the
//     network read getTransaction / getLedgerEntries right after CloseLedger with a clock that
//     does not move, so a ledger shown 1-3 s later is never seen (TestSim*, TestSuite*,
//     TestContractPendingPastBudgetIsTransferTimeout, TestContractSendAnswerLostIsInternalError,
//     TestContractUnexpectedAnswerIsSubmissionFailed).
//   - SubmitTimeBounds: TestContractFirstSendRefusedIsRPCError's rebuilt envelope has a maxTime
//     inside core's upper-bound offset (last close + 10 s) and is refused txTOO_LATE.
//   - RestorePreamble: TestContractArchivedBalanceRestoredInOneRequest and
//     TestContractRestoreRefusedIsRestoreRequired expect the protocol 22 restorePreamble flow.
//
// Queue ageing (4 ledgers) needs no exception here.
var simLegacy = stellarsim.Legacy{NoVisibilityLag: true, SubmitTimeBounds: true, RestorePreamble: true}
