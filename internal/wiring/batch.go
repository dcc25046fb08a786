package wiring

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// stellarBatcher is what internal/stellar's classic ledgers (RPCLedger, HorizonLedger) offer for
// batches: transfer.BatchLedger's PrepareBatch, and a CheckDestinations that answers each request
// with a stellar.DestinationCheck.
type stellarBatcher interface {
	PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error)
	CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]stellar.DestinationCheck, error)
}

// codeInvalidRequest is the code batchLedger gives a request internal/stellar refuses on its own
// (DestinationCheck.Err): non-empty, so RunQueuedBatch runs it alone and RunQueued's Prepare
// refuses it with the typed error, instead of PrepareBatch refusing the whole batch for it.
const codeInvalidRequest = "invalid_request"

// batchLedger makes a stellarBatcher a transfer.BatchLedger (transfer cannot import stellar).
type batchLedger struct{ l stellarBatcher }

// PrepareBatch is the ledger's own (stellar.RPCLedger.PrepareBatch).
func (b batchLedger) PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	return b.l.PrepareBatch(ctx, reqs, terms)
}

// CheckDestinations returns one code per request in order (transfer.BatchLedger): the check's
// Code, or codeInvalidRequest for a request the check refused itself (DestinationCheck.Err).
// The ledger's error is returned as is, with no codes.
func (b batchLedger) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]string, error) {
	checks, err := b.l.CheckDestinations(ctx, reqs)
	if err != nil {
		return nil, err
	}
	codes := make([]string, len(checks))
	for i, c := range checks {
		switch {
		case c.Err != nil:
			codes[i] = codeInvalidRequest
		default:
			codes[i] = c.Code
		}
	}
	return codes, nil
}

// batchesFor returns ledger as a transfer.BatchLedger when batchSize is above 1 and ledger can
// batch (a classic vault's RPCLedger or HorizonLedger), else nil: the one-transfer path. A
// contract ledger never batches (config refuses BATCH_SIZE above 1 with VAULT_CONTRACT).
func batchesFor(ledger StellarLedger, batchSize int) transfer.BatchLedger {
	if batchSize <= 1 {
		return nil
	}
	switch l := ledger.(type) {
	case *stellar.RPCLedger:
		return batchLedger{l}
	case *stellar.HorizonLedger:
		return batchLedger{l}
	}
	return nil
}

// SubmitterHandler is SubmitterFunction's handler over svc, logging on log: queue.BatchSubmitter
// when svc's orchestrator batches (BATCH_SIZE above 1 on a classic vault: batchesFor), so that an
// event's messages are paid together (transfer.RunQueuedBatch); else queue.Submitter, each
// message alone (RunQueued). Either backs a failed message off through svc.Redelivery.
func SubmitterHandler(svc *Service, log *slog.Logger) func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if svc.Orchestrator.Batches != nil {
		if svc.BatchNote != "" {
			log.Warn(svc.BatchNote)
		}
		return queue.BatchSubmitter(svc.Orchestrator, svc.Redelivery, log)
	}
	return queue.Submitter(svc.Orchestrator, svc.Redelivery, log)
}
