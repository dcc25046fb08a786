package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// The functions as `sam local start-lambda` serves them: the Lambda Invoke API
// (POST /2015-03-31/functions/{name}/invocations) on 127.0.0.1, so that
//
//	aws lambda invoke --endpoint-url http://127.0.0.1:3001 --function-name ReconcileFunction \
//	  --payload '{"action":"list"}' out.json
//
// works (AWS CLI v2 also wants --cli-binary-format raw-in-base64-out). The alert function is fed
// by the local stream (stream.go), and the sweep runs on a timer, as the schedule runs it in AWS.
// The same address serves the local EventBridge's PutEvents and GET /_events (events.go).

// Function names, the template's logical IDs.
const (
	apiFunction       = "ApiFunction"
	alertFunction     = "AlertFunction"
	reconcileFunction = "ReconcileFunction"
	// readerFunction is the read-only operators' function: the reconcile service with
	// RECONCILE_ACTIONS=read (list and get; README.md, "Operator roles").
	readerFunction = "InDoubtReaderFunction"
)

// OpsOptions configure the operating side of the local stack.
type OpsOptions struct {
	// LambdaAddr is the Invoke API's address (`make run`: 127.0.0.1:3001); empty means a free port.
	LambdaAddr string
	// SweepInterval is how often the sweep runs (default 1 minute, as the schedule).
	SweepInterval time.Duration
	// Metrics receives the EMF lines (nil: discarded).
	Metrics io.Writer
	// Events receives a line per settlement event (events.go; nil: discarded).
	Events io.Writer
	// Webhook, when set, also delivers every settlement event, signed, as WebhookFunction does
	// (webhook.go).
	Webhook *WebhookOptions
}

// operations are the alert and reconcile functions, the stream that feeds the first, the sweep
// timer and the Invoke API.
type operations struct {
	opts      Options
	emf       *metrics.Writer
	stream    *streamClient
	bus       *eventBus
	alert     *alert.Handler
	reconcile *reconcile.Service
	// cfg, keys and db are what the reconcile function is assembled from (set by Start before
	// start): as in AWS, it holds the keys (channels) and reads the leases through db.
	cfg       config.Config
	keys      signing.KeySource
	db        dynamo.Client
	functions map[string]lambda.Handler
	// queue carries async transfers to submit (set by Start before the service is built).
	queue *queue.Memory
	// tracing is TRACING=otel's local setup (tracing.go), nil otherwise.
	tracing *localTracing
	submit  *submitter
	stop    chan struct{}
	stopped chan struct{}
}

// newOperations prepares them; wrap and observer are used while the service is assembled, start
// once it is.
func newOperations(o Options) *operations {
	w := o.Ops.Metrics
	if w == nil {
		w = io.Discard
	}
	if o.Ops.SweepInterval <= 0 {
		o.Ops.SweepInterval = time.Minute
	}
	return &operations{opts: o, emf: metrics.New(w, nil), stop: make(chan struct{}), stopped: make(chan struct{})}
}

// wrap returns the client the functions write through, which emits the table's stream.
func (p *operations) wrap(db dynamo.Client) dynamo.Client {
	p.stream = newStreamClient(db, table, p.opts.Logger)
	return p.stream
}

// observer is the API function's observer: EMF metrics and the steps' spans (TRACING=otel; X-Ray
// records nothing locally).
func (p *operations) observer() transfer.Observer {
	return wiring.Observers{p.emf, tracing.Observer{}}
}

// start assembles the alert and reconcile functions over svc, starts the stream and the sweep
// timer, and serves the Invoke API.
func (p *operations) start(s *Stack, svc *wiring.Service) error {
	log := p.opts.Logger
	ln, err := s.listen("Lambda Invoke API", "LAMBDA_ADDR", p.opts.Ops.LambdaAddr)
	if err != nil {
		return err
	}
	s.Info.LambdaURL = "http://" + ln.Addr().String()
	s.Info.EventsURL = s.Info.LambdaURL + "/_events"
	// The settlement events go through the SDK's eventbridge client to the local PutEvents
	// (events.go), as the deployed alert function sends them to EventBridge.
	p.bus = newEventBus(localBus, p.opts.Ops.Events, log)
	s.shutdown = append(s.shutdown, p.bus.close)
	if o := p.opts.Ops.Webhook; o != nil {
		sleep := o.Sleep
		if sleep == nil {
			sleep = transfer.SystemClock{}.Sleep
		}
		wo := *o
		if wo.Secret == "" {
			wo.Secret = GenerateWebhookSecret()
			s.Info.WebhookSecret = wo.Secret
		}
		hook, err := newLocalWebhook(wo, log, sleep)
		if err != nil {
			return err // Start's Close frees the listener
		}
		p.bus.forward = hook.send
		s.shutdown = append(s.shutdown, hook.close)
		if u, err := url.Parse(o.URL); err == nil {
			s.Info.WebhookURL = u.Scheme + "://" + u.Host + u.Path
		}
	}
	events := eventbridge.New(eventbridge.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.Info.LambdaURL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	p.alert = alert.New(alert.Config{Store: svc.Store, Counters: svc.Store, Gauge: p.emf, Events: events, EventBus: localBus,
		EventFailures: p.emf, Logger: log, Archives: svc.Store, Batches: svc.Store})
	parts := wiring.ReconcileParts{
		Service: svc, Config: p.cfg, Getenv: p.opts.Getenv, Dynamo: p.db, Metrics: p.emf, Keys: p.keys,
		Queue: p.queue, Clock: svc.Orchestrator.Clock, Logger: log, Events: events, EventBus: localBus,
	}
	p.reconcile = wiring.Reconcile(parts)
	// As the template's InDoubtReaderFunction: read-only and without the keys.
	parts.ReadOnly, parts.Keys = true, nil
	reader := wiring.Reconcile(parts)
	p.functions = map[string]lambda.Handler{
		apiFunction:       lambda.NewHandler(api.NewLambdaHandler(svc.Handler)),
		alertFunction:     lambda.NewHandler(p.alert.Handle),
		reconcileFunction: p.reconcile, // a lambda.Handler itself: it reads every byte of the payload
		readerFunction:    reader,
		submitterFunction: lambda.NewHandler(queue.Submitter(svc.Orchestrator, queue.Visibility{}, log)),
	}
	// As the SQS event source the template configures: at most one transfer in flight per channel
	// account (at least 2), or, batched, one transaction in flight per source, each event k
	// transactions' worth of messages; gathered for the batching window. Under a
	// virtual clock the window is not waited (it would cost real time): what is waiting is taken.
	// The event source is sized by BATCH_SIZE as set (config.BatchSizeSet), before
	// BATCH_OPS_PER_LEDGER's share, as template.yaml sizes it from TransfersPerTransaction; and
	// the submitter pays at most k transactions an event, k the unbatched event's messages
	// (SUBMITTER_TRANSACTIONS_PER_INVOCATION, which the template sets from the same mapping).
	perTransaction := 1
	if o := svc.Orchestrator; o.Batches != nil && o.Settings != nil {
		perTransaction = o.Settings().BatchSize
		if p.opts.Getenv != nil {
			perTransaction = max(config.BatchSizeSet(p.opts.Getenv), perTransaction)
		}
		k := templateEventSource(len(s.Info.Channels), 1).batch
		settings := o.Settings
		o.Settings = func() transfer.Settings {
			st := settings()
			if st.TransactionsPerInvocation <= 0 {
				st.TransactionsPerInvocation = k
			}
			return st
		}
	}
	src := templateEventSource(len(s.Info.Channels), perTransaction)
	if p.opts.Clock != nil {
		src.window = 0
	}
	p.submit = newSubmitter(p.queue, svc.Orchestrator, svc.Orchestrator.Batches != nil, log, src, func(parent context.Context) (context.Context, context.CancelFunc) {
		return p.invocation(parent, submitterFunction)
	})
	p.stream.start(p.alert.Handle)
	p.submit.start()
	go p.sweepLoop()
	s.closers = append(s.closers, p.close)
	s.serve(ln, p.invokeHandler())
	return nil
}

func (p *operations) close() error {
	close(p.stop)
	<-p.stopped
	_ = p.submit.close()
	return p.stream.close()
}

// sweepLoop runs the reconcile function's sweep every SweepInterval, as the schedule does.
func (p *operations) sweepLoop() {
	defer close(p.stopped)
	t := time.NewTicker(p.opts.Ops.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			ctx, cancel := p.invocation(context.Background(), reconcileFunction)
			if _, err := p.reconcile.Sweep(ctx); err != nil {
				p.opts.Logger.ErrorContext(ctx, "scheduled sweep failed", "err", err)
			}
			cancel()
		}
	}
}

// invocation is the context a Lambda invocation of name would have: a request ID, the function's
// timeout and, with TRACING=otel, its span under a new trace header (tracing.go); cancel ends and
// flushes the span.
func (p *operations) invocation(parent context.Context, name string) (context.Context, context.CancelFunc) {
	ctx := lambdacontext.NewContext(parent, &lambdacontext.LambdaContext{AwsRequestID: newRequestID(), InvokedFunctionArn: functionARN(name)})
	ctx, end := p.tracing.invocation(ctx, name)
	ctx, cancel := context.WithTimeout(ctx, p.opts.FunctionTimeout)
	return ctx, func() { cancel(); end(nil) }
}

func functionARN(name string) string {
	return "arn:aws:lambda:us-east-1:000000000000:function:" + name
}

func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// maxPayload is Lambda's synchronous invocation payload limit.
const maxPayload = 6 << 20

// invokeHandler serves the Invoke API: RequestResponse (the default) answers the function's
// result, or its error with X-Amz-Function-Error; Event answers 202 and runs it in the
// background; DryRun answers 204.
func (p *operations) invokeHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /{$}", p.bus.putEvents)
	mux.HandleFunc("GET /_events", p.bus.stream)
	mux.HandleFunc("POST /2015-03-31/functions/{name}/invocations", func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if i := strings.LastIndex(name, ":function:"); i >= 0 {
			name = name[i+len(":function:"):]
		}
		h, ok := p.functions[name]
		if !ok {
			awsError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+functionARN(name))
			return
		}
		payload, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
		if err != nil || len(payload) > maxPayload {
			awsError(w, http.StatusRequestEntityTooLarge, "RequestTooLargeException", "the payload must be at most 6 MB")
			return
		}
		if len(payload) == 0 {
			payload = []byte("{}")
		}
		switch r.Header.Get("X-Amz-Invocation-Type") {
		case "Event":
			go func() {
				ctx, cancel := p.invocation(context.Background(), name)
				defer cancel()
				_, _ = p.call(ctx, h, payload)
			}()
			w.WriteHeader(http.StatusAccepted)
			return
		case "DryRun":
			w.WriteHeader(http.StatusNoContent)
			return
		}
		ctx, cancel := p.invocation(r.Context(), name)
		defer cancel()
		lc, _ := lambdacontext.FromContext(ctx)
		out, ierr := p.call(ctx, h, payload)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.Header().Set("X-Amzn-Requestid", lc.AwsRequestID)
		if ierr != nil {
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			out, _ = json.Marshal(ierr)
		}
		_, _ = w.Write(out)
	})
	return mux
}

// call invokes h as the Lambda runtime does: an error or a panic becomes the function error the
// runtime would report ({"errorMessage", "errorType"}).
func (p *operations) call(ctx context.Context, h lambda.Handler, payload []byte) (out []byte, ierr *messages.InvokeResponse_Error) {
	defer func() {
		if v := recover(); v != nil {
			p.opts.Logger.ErrorContext(ctx, "function panicked", "panic", fmt.Sprint(v))
			out, ierr = nil, &messages.InvokeResponse_Error{Message: fmt.Sprint(v), Type: "Runtime.Panic"}
		}
	}()
	out, err := h.Invoke(ctx, payload)
	if err == nil {
		return out, nil
	}
	var e messages.InvokeResponse_Error
	if errors.As(err, &e) {
		return nil, &e
	}
	t := reflect.TypeOf(err)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return nil, &messages.InvokeResponse_Error{Message: err.Error(), Type: t.Name()}
}

// awsError answers an Invoke API error as the AWS JSON protocol does (the CLI reads the type from
// the x-amzn-ErrorType header).
func awsError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Type": "User", "message": msg})
}
