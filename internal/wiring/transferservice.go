package wiring

import (
	"context"
	"errors"
	"net/http"
	"os"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
)

// TransferService is the start-up ApiFunction and SubmitterFunction share: the configuration
// from the environment, the AWS clients, the signing keys (SIGNER=secrets: the Secrets Manager
// secret; SIGNER=kms: the KMS keys; README.md, "Signing keys in KMS") read at init so that a
// missing or malformed secret, or a KMS key that is not an Ed25519 signing key, fails here and not
// on the first transfer, and the service assembled with EMF metrics and X-Ray. With SIGNER=kms
// the KMS keys are checked against their accounts on the network (SignerCheck): a key that is
// not a signer with enough weight fails the init, naming the account, the key and the weights;
// a network that cannot be read leaves the check pending (logged at ERROR). Only public keys
// are logged. With sends, the async queue (QUEUE_URL; none when empty: Prefer: respond-async is
// then ignored) is wired for the API's 202s; with QUEUE_URL set, Service.Redelivery is the SQS
// client on it, for the submitter's backoff. Without sends (SubmitterFunction) a transfer waits
// SubmitterChannelWaitLedgers for a channel. The Stellar backend's network and release are checked
// (Init.CheckBackend). Any failure ends the init (Init.Check).
func (in *Init) TransferService(sends bool) *Service {
	cfg, err := config.Load(os.Getenv)
	in.Check("invalid configuration", err)
	ctx := context.Background()
	clients, err := NewAWSClients(ctx, cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	keys, err := SigningKeys(cfg, clients.Secrets, clients.KMS)
	if errors.Is(err, ErrNoSigningKeys) {
		in.Fatal("invalid configuration", err)
	}
	in.Check("signing keys", err)
	loaded, err := keys.Keys(ctx)
	in.Check("signing keys", err)
	// Public keys only (Keys.LogValue): with SIGNER=kms, the G... of each KMS key.
	in.Logger.Info("signing keys", "keys", loaded)
	deps := Deps{
		Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Keys: keys, Logger: in.Logger,
		HTTPClient: tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout}),
		Observer:   Observers{metrics.New(os.Stdout, nil), tracing.Observer{}},
	}
	if sends && cfg.QueueURL != "" {
		deps.Queue = queue.SQS{Client: clients.SQS, URL: cfg.QueueURL}
	}
	if !sends {
		// SubmitterFunction: a busy answer requeues, so it waits longer for a channel.
		deps.ChannelWaitLedgers = SubmitterChannelWaitLedgers
	}
	var check *SignerCheck
	if cfg.Signer == config.SignerKMS {
		check = &SignerCheck{Source: keys, Logger: in.Logger}
		deps.Keys = check
	}
	svc, err := Build(deps)
	in.Check("assembling the service", err)
	in.CheckBackend(svc.Ledger)
	if check != nil {
		check.Ledger = svc.Ledger
		in.checkSigners(ctx, check)
	}
	if cfg.QueueURL != "" {
		svc.Redelivery = queue.Visibility{Changer: clients.SQS, URL: cfg.QueueURL}
	}
	return svc
}

// checkSigners runs the start-up signer check (SignerCheck.Start): a key that cannot sign is
// Fatal; an unreadable network is logged at ERROR and the start goes on (SignerCheck says why).
func (in *Init) checkSigners(ctx context.Context, check *SignerCheck) {
	err := check.Start(ctx)
	switch {
	case err == nil:
		in.Logger.Info("signing keys checked: each can sign for its account")
	case errors.Is(err, ErrSignerCheckPending):
		in.Logger.Error("signing keys not checked at start; checked again before the first signature", "err", err)
	default:
		in.Fatal("signing keys cannot sign", err)
	}
}
