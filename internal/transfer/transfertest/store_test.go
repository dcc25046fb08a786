package transfertest_test

import (
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// TestStoreContract holds the in-memory Store to the DynamoDB store's rules; internal/dynamo runs
// the same suite on its Store.
func TestStoreContract(t *testing.T) {
	transfertest.StoreContract(t, func(*testing.T) transfer.Store { return transfertest.NewStore() })
}

// TestLimitContract holds the in-memory Store's daily counters to the DynamoDB store's rules;
// internal/dynamo runs the same suite on its Store.
func TestLimitContract(t *testing.T) {
	transfertest.LimitContract(t, func(*testing.T) transfertest.LimitStore { return transfertest.NewStore() })
}

// TestBatchContract holds the in-memory Store's batches to the DynamoDB store's rules;
// internal/dynamo runs the same suite on its Store.
func TestBatchContract(t *testing.T) {
	transfertest.BatchContract(t, func(*testing.T) transfertest.BatchStore { return transfertest.NewStore() })
}

// TestManyContract holds the in-memory Store's GetMany to the DynamoDB store's rules;
// internal/dynamo runs the same suite on its Store.
func TestManyContract(t *testing.T) {
	transfertest.ManyContract(t, func(*testing.T) transfertest.ManyStore { return transfertest.NewStore() })
}
