// Command api is the ApiFunction Lambda: API Gateway HTTP API (payload 2.0) -> internal/api.
// It only wires; configuration is described in README.md.
package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	in := wiring.Begin()
	cfg, err := config.Load(os.Getenv)
	in.Check("invalid configuration", err)
	ctx := context.Background()
	clients, err := wiring.NewAWSClients(ctx, cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	// SIGNER=secrets (default): the Secrets Manager secret; SIGNER=kms: KMS keys (README.md).
	keys, err := wiring.SigningKeys(cfg, clients.Secrets, clients.KMS)
	if errors.Is(err, wiring.ErrNoSigningKeys) {
		in.Fatal("invalid configuration", err)
	}
	in.Check("signing keys", err)
	// Read the keys at init: a missing or malformed secret, or a KMS key that is not an Ed25519
	// signing key, fails here, not on the first transfer.
	loaded, err := keys.Keys(ctx)
	in.Check("signing keys", err)
	// Public keys only (Keys.LogValue): with SIGNER=kms, the G... of each KMS key.
	in.Logger.Info("signing keys", "keys", loaded)
	svc, err := wiring.Build(wiring.Deps{
		Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Keys: keys, Logger: in.Logger,
		HTTPClient: tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout}),
		Observer:   wiring.Observers{metrics.New(os.Stdout, nil), tracing.Observer{}},
		Queue:      asyncQueue(cfg, clients),
	})
	in.Check("assembling the service", err)
	lambda.Start(api.NewLambdaHandler(svc.Handler))
}

// asyncQueue is the queue of async transfers (QUEUE_URL), nil without one: Prefer: respond-async
// is then ignored.
func asyncQueue(cfg config.Config, clients wiring.AWSClients) transfer.Queue {
	if cfg.QueueURL == "" {
		return nil
	}
	return queue.SQS{Client: clients.SQS, URL: cfg.QueueURL}
}
