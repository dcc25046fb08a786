// Command api is the ApiFunction Lambda: API Gateway HTTP API (payload 2.0) -> internal/api.
// It only wires; configuration is described in README.md.
package main

import (
	"context"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	logger := logging.New(os.Stdout, slog.LevelInfo)
	fail := func(msg string, err error) {
		logger.Error(msg, "err", err)
		os.Exit(1)
	}
	if err := tracing.Configure(); err != nil {
		fail("X-Ray configuration", err)
	}
	cfg, err := config.Load(os.Getenv)
	if err != nil {
		fail("invalid configuration", err)
	}
	if cfg.SigningSecretARN == "" {
		fail("invalid configuration", errSigningSecret)
	}
	ctx := context.Background()
	clients, err := wiring.NewAWSClients(ctx, cfg.DynamoEndpoint)
	if err != nil {
		fail("AWS clients", err)
	}
	keys, err := stellar.NewSecretKeys(stellar.SecretKeysConfig{Client: clients.Secrets, SecretID: cfg.SigningSecretARN})
	if err != nil {
		fail("signing keys", err)
	}
	// Read the secret at init: a missing or malformed secret fails here, not on the first transfer.
	if _, err := keys.Keys(ctx); err != nil {
		fail("signing keys", err)
	}
	svc, err := wiring.Build(wiring.Deps{
		Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Keys: keys, Logger: logger,
		HTTPClient: tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout}),
		Observer:   wiring.Observers{metrics.New(os.Stdout, nil), tracing.Observer{}},
	})
	if err != nil {
		fail("assembling the service", err)
	}
	lambda.Start(api.NewLambdaHandler(svc.Handler))
}

type configError string

func (e configError) Error() string { return string(e) }

const errSigningSecret = configError("SIGNING_SECRET_ARN is required")
