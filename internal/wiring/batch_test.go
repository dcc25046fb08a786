package wiring

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

type fakeBatcher struct {
	checks []stellar.DestinationCheck
	err    error
}

func (f fakeBatcher) PrepareBatch(context.Context, []transfer.Request, transfer.Terms) (transfer.Envelope, error) {
	return transfer.Envelope{}, errors.New("unused")
}

func (f fakeBatcher) CheckDestinations(context.Context, []transfer.Request) ([]stellar.DestinationCheck, error) {
	return f.checks, f.err
}

// Each check maps to its code in order; a request the check refuses itself gets a non-empty code
// so it runs alone; the ledger's error passes through with no codes.
func TestBatchLedgerCheckDestinations(t *testing.T) {
	b := batchLedger{fakeBatcher{checks: []stellar.DestinationCheck{
		{}, {Code: "op_no_trust"}, {Err: &transfer.ValidationError{}}, {Code: "op_line_full"},
	}}}
	codes, err := b.CheckDestinations(context.Background(), make([]transfer.Request, 4))
	if err != nil || strings.Join(codes, ",") != ",op_no_trust,"+codeInvalidRequest+",op_line_full" {
		t.Fatalf("codes = %q, %v", codes, err)
	}
	down := errors.New("rpc down")
	if codes, err := (batchLedger{fakeBatcher{err: down}}).CheckDestinations(context.Background(), nil); !errors.Is(err, down) || codes != nil {
		t.Fatalf("failed check = %q, %v", codes, err)
	}
}

// BATCH_SIZE 1 (the default) or a ledger that cannot batch leaves the orchestrator without
// Batches: the one-transfer path.
func TestBatchesFor(t *testing.T) {
	l := &stellar.RPCLedger{}
	if batchesFor(l, 1) != nil || batchesFor(l, 0) != nil {
		t.Fatal("BATCH_SIZE 1 batches")
	}
	if _, ok := batchesFor(l, 10).(batchLedger); !ok {
		t.Fatal("an RPCLedger with BATCH_SIZE 10 does not batch")
	}
	if _, ok := batchesFor(&stellar.HorizonLedger{}, 2).(batchLedger); !ok {
		t.Fatal("a HorizonLedger with BATCH_SIZE 2 does not batch")
	}
	if batchesFor(&stellar.ContractLedger{}, 10) != nil {
		t.Fatal("a contract ledger batches")
	}
}
