package dynamo_test

import (
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// TestTransferStoreContractMinidyn holds the Store on minidyn to transfer.Store's contract, the
// suite the in-memory store the orchestrator's tests use passes too: what those tests learn holds
// here.
func TestTransferStoreContractMinidyn(t *testing.T) {
	transfertest.StoreContract(t, func(t *testing.T) transfer.Store { return minidynFixture(t).store })
}

// TestTransferStoreContractDynalite runs the same suite against dynalite at $DYNALITE_ENDPOINT.
func TestTransferStoreContractDynalite(t *testing.T) {
	client := dynaliteClient(t)
	transfertest.StoreContract(t, func(t *testing.T) transfer.Store { return newFixture(t, client).store })
}

// TestLimitContractMinidyn holds the Store's daily counters on minidyn to the limit contract, the
// suite the in-memory store passes too. It runs on minidyn only: dynalite (4.0.0) has no
// TransactWriteItems, which a charged claim and a give-back are.
func TestLimitContractMinidyn(t *testing.T) {
	transfertest.LimitContract(t, func(t *testing.T) transfertest.LimitStore { return minidynFixture(t).store })
}

// TestBatchContractMinidyn holds the Store's batches on minidyn to the batch contract, the suite
// the in-memory store passes too. minidyn only, as the limits: dynalite (4.0.0) has no
// TransactWriteItems, which a write over a batch's keys is.
func TestBatchContractMinidyn(t *testing.T) {
	transfertest.BatchContract(t, func(t *testing.T) transfertest.BatchStore { return minidynFixture(t).store })
}

// TestManyContractMinidyn holds the Store's GetMany (BatchGetItem) on minidyn to the contract the
// in-memory store passes too.
func TestManyContractMinidyn(t *testing.T) {
	transfertest.ManyContract(t, func(t *testing.T) transfertest.ManyStore { return minidynFixture(t).store })
}

// TestManyContractDynalite runs the same suite against dynalite at $DYNALITE_ENDPOINT, which
// validates a BatchGetItem as DynamoDB does (at most 100 keys, none twice).
func TestManyContractDynalite(t *testing.T) {
	client := dynaliteClient(t)
	transfertest.ManyContract(t, func(t *testing.T) transfertest.ManyStore { return newFixture(t, client).store })
}
