// Package wiring assembles the service from its parts: configuration, the DynamoDB store, the
// Stellar ledger and the HTTP handler. Both the Lambda function (functions/api) and the local
// stack (internal/devstack) use it, so the code under test locally is the code deployed.
package wiring

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Deps are the outside world the service is assembled over.
type Deps struct {
	Config config.Config
	// Getenv is read per call for the orchestrator's settings.
	Getenv config.Getenv
	Dynamo dynamo.Client
	Keys   signing.KeySource
	// HTTPClient carries Stellar requests; nil means a client with stellar.DefaultHTTPTimeout.
	HTTPClient *http.Client
	Logger     *slog.Logger
	// Clock is the orchestrator's clock; nil means the system clock.
	Clock transfer.Clock
	// Observer receives the orchestrator's traces and reports (metrics); nil means none.
	Observer transfer.Observer
	// Queue carries async transfers (queue.SQS on QUEUE_URL); nil: the API ignores Prefer:
	// respond-async and runs every transfer synchronously.
	Queue transfer.Queue
	// ChannelWaitLedgers is how many ledger intervals a transfer waits for a channel before it is
	// answered CHANNELS_BUSY (sources.ChannelPoolConfig.WaitLedgers); 0 means 1, the API's.
	ChannelWaitLedgers int
	// ChannelReleaseTimeout bounds a channel lease's release (sources.ChannelPoolConfig.
	// ReleaseTimeout, real time); 0 means sources.DefaultReleaseTimeout. Set long only where Clock
	// is virtual and its round trips can outlast it in real time (internal/loadtest).
	ChannelReleaseTimeout time.Duration
}

// SubmitterChannelWaitLedgers is how many ledger intervals SubmitterFunction's transfers wait for a
// channel, where the API's wait one. The API answers fast because a client holds the connection
// and API Gateway cuts it at 30 s. A submitter's CHANNELS_BUSY instead requeues its message:
// another environment, which holds none of the calendar slots this one booked, takes it up later
// and books again further ahead, so under a burst the busy answers cascade into requeues and
// dead-lettered messages while the slots booked for them pass unused. A batch of BatchSize
// transfers booked at once spans up to BatchSize slots, each aligned to its channel's ledger, so
// up to two intervals ahead; three leave a ledger's margin. The wait stays inside the transfer's
// budget and its envelope's maxTime (sources.ChannelPool.Acquire). Measured in README.md,
// "Benchmarks".
const SubmitterChannelWaitLedgers = 3

// Service is the assembled API service.
type Service struct {
	Orchestrator *transfer.Orchestrator
	Ledger       StellarLedger
	Store        *dynamo.Store
	Handler      http.Handler
	// Channels is the channel account pool; nil when CHANNEL_COUNT is 0 (the vault is the source).
	Channels *sources.ChannelPool
	// Redelivery is where SubmitterFunction backs off a failed message (queue.Submitter): the SQS
	// client on QUEUE_URL, set by Init.TransferService when QUEUE_URL is; zero (no change of
	// visibility) from Build.
	Redelivery queue.Visibility
	// BatchNote is config.BatchShareNote: what a batched submitter warns of at init ("" for none).
	BatchNote string
}

// Build assembles the API service. It makes no network call.
func Build(d Deps) (*Service, error) {
	assets := make([]txnbuild.CreditAsset, len(d.Config.Assets))
	for i, a := range d.Config.Assets {
		assets[i] = txnbuild.CreditAsset{Code: a.Code, Issuer: a.Issuer}
	}
	// One ledger cadence per process: every call's await learns from the others' reads, and the
	// channel wait and Retry-After follow the interval it measures.
	cadence := &transfer.Cadence{}
	ledger, pool, err := buildLedger(d, assets, cadence)
	if err != nil {
		return nil, fmt.Errorf("wiring: %w", err)
	}
	logger := d.Logger
	if logger == nil {
		logger = slog.Default()
	}
	clock := d.Clock
	if clock == nil {
		clock = transfer.SystemClock{}
	}
	store := dynamo.New(d.Dynamo, d.Config.Table).WithClock(clock)
	getenv := d.Getenv
	orch := &transfer.Orchestrator{
		Store: store, Ledger: ledger, Clock: clock, Logger: logger,
		Settings: func() transfer.Settings { return config.Settings(getenv) },
		Breaker:  transfer.NewBreaker(d.Config.Breaker),
		Observer: d.Observer,
		Cadence:  cadence,

		WalletHistory: store,
		Archives:      store,
		Queue:         d.Queue,
		Limits:        d.Config.Limits,
	}
	if adm, ok := ledger.(transfer.Admission); ok && pool != nil {
		// A call the channel calendar has no slot for within the wait is answered CHANNELS_BUSY
		// before its claim: a read of its key instead of a claim and its release.
		orch.Admission = adm
	}
	// BATCH_SIZE above 1 pays queued transfers in batches (transfer.RunQueuedBatch); 1, the
	// default, leaves Batches nil: every queued transfer runs alone (RunQueued). BATCH_SIZE as
	// set, not as BATCH_OPS_PER_LEDGER's share lowers it: batches the share makes 1 still come
	// k x BATCH_SIZE messages an event, which RunQueuedBatch bounds to k transactions and the
	// one-transfer handler would run all at once.
	orch.Batches = batchesFor(ledger, config.BatchSizeSet(getenv))
	codes := d.Config.AssetCodes()
	rules := func() transfer.Rules {
		return transfer.Rules{Assets: codes, MaxKeyLength: config.Settings(getenv).MaxKeyLength, Addresses: stellar.Addresses{}}
	}
	opts := []api.Option{api.WithLogger(logger)}
	if d.Queue != nil {
		opts = append(opts, api.WithAsync(orch), api.WithCancel(orch))
	}
	h := api.NewHandler(orch, rules, opts...)
	return &Service{Orchestrator: orch, Ledger: ledger, Channels: pool, Store: store, Handler: h, BatchNote: config.BatchShareNote(getenv)}, nil
}

// AWSClients are the AWS SDK clients the functions use.
type AWSClients struct {
	Dynamo  *dynamodb.Client
	Secrets *secretsmanager.Client
	SNS     *sns.Client
	// KMS signs with the vault's and the fee account's keys when SIGNER=kms.
	KMS *kms.Client
	// Config is what they were built from (region, credentials, X-Ray), for a function's other
	// clients: the alert function's eventbridge client is built by Init.AlertHandler, so the other
	// functions do not link it.
	Config aws.Config
	// SQS sends async transfers to QUEUE_URL.
	SQS *sqs.Client
}

// NewAWSClients loads the AWS configuration (region and credentials from the Lambda environment)
// and builds the clients; endpoint overrides the DynamoDB endpoint when set (the local stack), and
// KMS_ENDPOINT (read from the environment) the KMS endpoint.
func NewAWSClients(ctx context.Context, dynamoEndpoint string) (AWSClients, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return AWSClients{}, fmt.Errorf("wiring: AWS config: %w", err)
	}
	tracing.InstrumentAWS(&cfg) // one X-Ray subsegment per AWS call in a traced invocation
	db := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if dynamoEndpoint != "" {
			o.BaseEndpoint = &dynamoEndpoint
		}
	})
	return AWSClients{Dynamo: db, Secrets: secretsmanager.NewFromConfig(cfg), SNS: sns.NewFromConfig(cfg),
		KMS: kms.NewFromConfig(cfg, kmsOptions(os.Getenv("KMS_ENDPOINT"))), SQS: sqs.NewFromConfig(cfg), Config: cfg}, nil
}
