// Command reconcile is the ReconcileFunction Lambda: operator actions and the scheduled sweep ->
// internal/reconcile. It only wires. Payloads: {"action":"list"|"get"|"resolve"|"sweep"|"channels",
// ...}; see README.md. Environment: as the API function (TABLE_NAME, STELLAR_RPC_URL,
// NETWORK_PASSPHRASE, VAULT_ACCOUNT, ASSETS, ...). SIGNING_SECRET_ARN is optional: reconciling
// only looks transactions up; the keys are read only for the `channels` action, which creates
// missing channel accounts, and by each sweep's watch for the fee and channel accounts' addresses
// (wiring.Watch: the balances and the channel leases in use, as metrics).
//
// The same binary is InDoubtReaderFunction with RECONCILE_ACTIONS=read (config.LoadReconcileActions):
// it answers list and get only, refuses the rest with the problem ACTION_NOT_ALLOWED, and never
// reads the signing secret (README.md, "Operator roles").
package main

import (
	"context"
	"errors"
	"net/http"
	"os"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	in := wiring.Begin()
	cfg, err := config.Load(os.Getenv)
	in.Check("invalid configuration", err)
	actions, err := config.LoadReconcileActions(os.Getenv)
	in.Check("invalid configuration", err)
	readOnly := actions == config.ReconcileRead
	clients, err := wiring.NewAWSClients(context.Background(), cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	emf := metrics.New(os.Stdout, nil)
	var keys stellar.KeySource = noSigning{}
	// The secret is passed only with channels (template.yaml); with SIGNER=kms the fee account's
	// KMS key signs their creation and the secret holds the channel keys. The read-only reader
	// never reads a key.
	signing := cfg.SigningSecretARN != "" && !readOnly
	if signing {
		keys, err = wiring.SigningKeys(cfg, clients.Secrets, clients.KMS)
		in.Check("signing keys", err)
	}
	svc, err := wiring.Build(wiring.Deps{
		Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Keys: keys, Logger: in.Logger,
		HTTPClient: tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout}),
		Observer:   tracing.Observer{},
	})
	in.Check("assembling the service", err)
	// The sweep and resolve prove deaths: a backend release they cannot work with ends the init.
	in.CheckBackend(svc.Ledger)
	rcfg := reconcile.Config{
		Store: svc.Store, Settler: svc.Orchestrator, Ledger: svc.Ledger, Gauge: emf, Clock: transfer.SystemClock{},
		KeyTTL: func() time.Duration { return config.Settings(os.Getenv).KeyTTL }, Logger: in.Logger,
		ReadOnly: readOnly,
	}
	if !readOnly {
		// The sweep sends queued items' messages again (README.md, "Asynchronous transfers"); with
		// QUEUE_URL empty it counts the queued items nothing will send and reports them (ERROR,
		// transfer_orchestration_queued_stranded).
		rcfg.Queued, rcfg.Stranded = svc.Store, emf
		if cfg.QueueURL != "" {
			rcfg.Queue = queue.SQS{Client: clients.SQS, URL: cfg.QueueURL}
		}
	}
	if signing && svc.Channels != nil {
		rcfg.Channels = func(ctx context.Context) (any, error) { return svc.Ledger.EnsureChannels(ctx) }
	}
	// Every sweep writes the vault's and the fee account's balances and the channel leases in use.
	watch := &wiring.Watch{Ledger: svc.Ledger, Gauges: emf, Vault: cfg.VaultAccount, Assets: cfg.AssetCodes(),
		Clock: transfer.SystemClock{}, Logger: in.Logger}
	if signing {
		watch.Accounts = wiring.KeyAccounts(keys, svc.Channels)
		if svc.Channels != nil {
			watch.Leases = dynamo.NewChannelLeases(clients.Dynamo, cfg.Table)
		}
	}
	rcfg.Watch = watch.Run
	rec := reconcile.New(rcfg)
	in.Start(rec) // a lambda.Handler: the payload's bytes, every one of them (reconcile.Service.Invoke)
}

// noSigning is the key source of a function that never signs.
type noSigning struct{}

func (noSigning) Keys(context.Context) (stellar.Keys, error) {
	return stellar.Keys{}, errors.New("the reconcile function does not sign transactions")
}
