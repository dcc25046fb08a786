// Command submitter is the SubmitterFunction Lambda: SQS events of async transfers ->
// internal/queue.Submitter -> transfer.Orchestrator.RunQueued (README.md, "Asynchronous
// transfers"). It only wires. Environment: as the API function (TABLE_NAME, STELLAR_RPC_URL,
// NETWORK_PASSPHRASE, VAULT_ACCOUNT, ASSETS, SIGNING_SECRET_ARN or SIGNER=kms, ...); it sends no
// message itself (QUEUE_URL is not read).
package main

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	in := wiring.Begin()
	cfg, err := config.Load(os.Getenv)
	in.Check("invalid configuration", err)
	ctx := context.Background()
	clients, err := wiring.NewAWSClients(ctx, cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	keys, err := wiring.SigningKeys(cfg, clients.Secrets, clients.KMS)
	if errors.Is(err, wiring.ErrNoSigningKeys) {
		in.Fatal("invalid configuration", err)
	}
	in.Check("signing keys", err)
	// Read the keys at init, as the API function does: a bad secret or key fails here.
	loaded, err := keys.Keys(ctx)
	in.Check("signing keys", err)
	in.Logger.Info("signing keys", "keys", loaded)
	svc, err := wiring.Build(wiring.Deps{
		Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Keys: keys, Logger: in.Logger,
		HTTPClient: tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout}),
		Observer:   wiring.Observers{metrics.New(os.Stdout, nil), tracing.Observer{}},
	})
	in.Check("assembling the service", err)
	lambda.Start(queue.Submitter(svc.Orchestrator, in.Logger))
}
