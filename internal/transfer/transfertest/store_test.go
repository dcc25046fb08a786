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
