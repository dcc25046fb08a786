package wiring

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// ReconcileParts are what the reconcile function is assembled from. functions/reconcile and the
// local stack (internal/devstack) both assemble it with Reconcile, so the function an operator
// invokes locally is the one deployed.
type ReconcileParts struct {
	// Service is the assembled service (Build): its store, orchestrator (which settles), ledger and
	// channel pool.
	Service *Service
	// Config gives the vault, the asset codes and the table the sweep's watch reads.
	Config config.Config
	// Getenv reads IDEMPOTENCY_KEY_TTL_MS at every resolve (config.Settings).
	Getenv func(string) string
	// Dynamo is the client the watch reads the channel leases with.
	Dynamo dynamo.Client
	// Metrics receives the in-doubt gauges, the stranded queued count and the watch's gauges.
	Metrics *metrics.Writer
	// Keys are the signing keys, nil for a function that holds none (no SIGNING_SECRET_ARN, or the
	// read-only reader): there is then no channels action and the watch reads no key's account.
	Keys signing.KeySource
	// Queue is where the sweep sends a queued item's message again (QUEUE_URL); nil: nowhere, and
	// the sweep counts the queued items nothing will send (reconcile.Config.Stranded).
	Queue transfer.Queue
	// ReadOnly is InDoubtReaderFunction (RECONCILE_ACTIONS=read): list, get and report only.
	ReadOnly bool
	// Events and EventBus, both set, publish the daily reconciliation's event (DailyPublisher);
	// otherwise it is only logged, stored and counted.
	Events   alert.EventPublisher
	EventBus string
	Clock    transfer.Clock
	Logger   *slog.Logger
}

// Reconcile returns the reconcile function's service: ReconcileFunction, or InDoubtReaderFunction
// with ReadOnly (README.md, "Operator roles"). Every sweep first writes the vault's and the fee
// account's balances and the channel leases in use (Watch). It makes no network call.
func Reconcile(p ReconcileParts) *reconcile.Service {
	svc, getenv := p.Service, p.Getenv
	rcfg := reconcile.Config{
		Store: svc.Store, Settler: svc.Orchestrator, Ledger: svc.Ledger, Gauge: p.Metrics, Clock: p.Clock,
		KeyTTL: func() time.Duration { return config.Settings(getenv).KeyTTL }, Logger: p.Logger,
		ReadOnly: p.ReadOnly,
	}
	if p.ReadOnly {
		// The reader answers list, get and the stored daily reports only: it neither settles, nor
		// sweeps, nor watches, nor runs the daily reconciliation.
		rcfg.Daily = &reconcile.Daily{Reports: svc.Store}
		return reconcile.New(rcfg)
	}
	rcfg.Daily = &reconcile.Daily{Archives: svc.Store, Reports: svc.Store, Gauge: p.Metrics}
	if dr, ok := svc.Ledger.(transfer.DayReader); ok {
		rcfg.Daily.Chain = dr
	}
	if p.Events != nil && p.EventBus != "" {
		rcfg.Daily.Publish = DailyPublisher(p.Events, p.EventBus)
	}
	rcfg.Queued, rcfg.Stranded = svc.Store, p.Metrics
	if p.Queue != nil {
		rcfg.Queue = p.Queue
	}
	watch := &Watch{Ledger: svc.Ledger, Gauges: p.Metrics, Vault: p.Config.VaultAccount, Assets: p.Config.AssetCodes(),
		Clock: p.Clock, Logger: p.Logger}
	if p.Keys != nil {
		watch.Accounts = KeyAccounts(p.Keys, svc.Channels)
		if svc.Channels != nil {
			rcfg.Channels = func(ctx context.Context) (any, error) { return svc.Ledger.EnsureChannels(ctx) }
			watch.Leases = dynamo.NewChannelLeases(p.Dynamo, p.Config.Table)
		}
	}
	rcfg.Watch = watch.Run
	return reconcile.New(rcfg)
}

// ReconcileService is the start-up of ReconcileFunction and InDoubtReaderFunction: the
// configuration and RECONCILE_ACTIONS from the environment, the AWS clients, the signing keys
// only where the function may sign (SIGNING_SECRET_ARN set and not the read-only reader: the
// channels action creates missing channel accounts, and the watch names the fee and channel
// accounts), the service assembled, and the backend checked (Init.CheckBackend: the sweep and
// resolve prove deaths, so a release they cannot work with ends the init). Any failure ends the
// init (Init.Check).
func (in *Init) ReconcileService() *reconcile.Service {
	cfg, err := config.Load(os.Getenv)
	in.Check("invalid configuration", err)
	actions, err := config.LoadReconcileActions(os.Getenv)
	in.Check("invalid configuration", err)
	readOnly := actions == config.ReconcileRead
	clients, err := NewAWSClients(context.Background(), cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	emf := metrics.New(os.Stdout, nil)
	var keys signing.KeySource
	// The secret is passed only with channels (template.yaml); with SIGNER=kms the fee account's
	// KMS key signs their creation and the secret holds the channel keys.
	if cfg.SigningSecretARN != "" && !readOnly {
		keys, err = SigningKeys(cfg, clients.Secrets, clients.KMS)
		in.Check("signing keys", err)
	}
	deps := Deps{
		Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Keys: keys, Logger: in.Logger,
		HTTPClient: tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout}),
		// The metrics too: the sweep's and a discard's Settle count a failure it pages
		// (transfer.Orchestrator.Settle), which the alarms on its code read.
		Observer: Observers{emf, tracing.Observer{}},
	}
	if keys == nil {
		deps.Keys = noSigning{}
	}
	svc, err := Build(deps)
	in.Check("assembling the service", err)
	in.CheckBackend(svc.Ledger)
	p := ReconcileParts{
		Service: svc, Config: cfg, Getenv: os.Getenv, Dynamo: clients.Dynamo, Metrics: emf, Keys: keys,
		ReadOnly: readOnly, Clock: transfer.SystemClock{}, Logger: in.Logger,
	}
	if cfg.QueueURL != "" {
		p.Queue = queue.SQS{Client: clients.SQS, URL: cfg.QueueURL}
	}
	if !readOnly {
		bus, err := config.LoadEventBus(os.Getenv)
		in.Check("invalid configuration", err)
		if bus != "" {
			p.Events, p.EventBus = eventbridge.NewFromConfig(clients.Config), bus
		}
	}
	return Reconcile(p)
}

// noSigning is the key source of a reconcile function that holds no keys: it looks
// transactions up and never signs.
type noSigning struct{}

func (noSigning) Keys(context.Context) (signing.Keys, error) {
	return signing.Keys{}, errors.New("the reconcile function does not sign transactions")
}

// AlertHandler is the start-up of AlertFunction: the table's stream (NEW_AND_OLD_IMAGES, with
// ReportBatchItemFailures) read by internal/alert, which writes the in-doubt gauges, publishes
// in-doubt alerts to ALERT_TOPIC_ARN (optional SNS topic) and settlement events to EVENT_BUS_NAME
// (optional EventBridge bus; AWS_ENDPOINT_URL_EVENTBRIDGE points it elsewhere, as the SDK reads
// it). Any failure ends the init (Init.Check).
func (in *Init) AlertHandler() *alert.Handler {
	cfg, err := config.LoadAlert(os.Getenv)
	in.Check("invalid configuration", err)
	clients, err := NewAWSClients(context.Background(), cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	emf := metrics.New(os.Stdout, nil)
	store := dynamo.New(clients.Dynamo, cfg.Table)
	ac := alert.Config{Store: store, Counters: store, Gauge: emf, Logger: in.Logger, Archives: store, Retention: cfg.Retention, Batches: store}
	if cfg.TopicARN != "" {
		ac.Publisher, ac.TopicARN = clients.SNS, cfg.TopicARN
	}
	if cfg.EventBus != "" {
		ac.Events, ac.EventBus, ac.EventFailures = eventbridge.NewFromConfig(clients.Config), cfg.EventBus, emf
	}
	return alert.New(ac)
}

// WebhookHandler is the start-up of WebhookFunction: the settlement events the template's rule
// puts on its queue, posted to WEBHOOK_URL signed with the secrets in WEBHOOK_SECRET_ARN (read
// again every webhook.SecretTTL), failed ones timed for retry on QUEUE_URL (internal/webhook).
// Any failure ends the init (Init.Check).
func (in *Init) WebhookHandler() *webhook.Handler {
	cfg, err := config.LoadWebhook(os.Getenv)
	in.Check("invalid configuration", err)
	clients, err := NewAWSClients(context.Background(), "")
	in.Check("AWS clients", err)
	return webhook.New(webhook.Config{Endpoint: cfg.URL, Secrets: &webhook.SecretSource{API: clients.Secrets, ID: cfg.SecretARN},
		Visibility: queue.Visibility{Changer: clients.SQS, URL: cfg.QueueURL}, Logger: in.Logger})
}

// DailyPublisher publishes a daily reconciliation's summary to bus: one PutEvents entry, source
// alert.EventSource, detail-type reconcile.DailyDetailType, the summary as its detail (redacted as
// the settlement events are). An entry PutEvents refuses is an error.
func DailyPublisher(events alert.EventPublisher, bus string) func(ctx context.Context, s reconcile.DailySummary) error {
	return func(ctx context.Context, s reconcile.DailySummary) error {
		body, err := json.Marshal(s)
		if err != nil {
			return err
		}
		out, err := events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{{
			EventBusName: aws.String(bus), Source: aws.String(alert.EventSource), DetailType: aws.String(reconcile.DailyDetailType),
			Detail: aws.String(logging.Redact(string(body))), Time: aws.Time(s.GeneratedAt),
		}}})
		switch {
		case err != nil:
			return err
		case len(out.Entries) != 1 || out.Entries[0].ErrorCode != nil:
			code := "no entry answered"
			if len(out.Entries) == 1 {
				code = aws.ToString(out.Entries[0].ErrorCode) + ": " + aws.ToString(out.Entries[0].ErrorMessage)
			}
			return errors.New("PutEvents refused the daily reconciliation's event: " + code)
		}
		return nil
	}
}
