package tracing

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	//lint:ignore SA1019 deprecated upstream for want of an owner, still the AWS SDK's instrumentation (doc.go, "Upstream status").
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/contrib/propagators/aws/xray"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// The OpenTelemetry half (TRACING=otel): everything that calls the OpenTelemetry SDK is in this
// file and lambda.go (package doc, "The OpenTelemetry path").

// ExportTimeout bounds one export of spans, the flush at the end of each sampled invocation
// included (one HTTPS request to the endpoint in the function's own region): an invocation never
// holds its answer longer than this for its spans.
const ExportTimeout = 2 * time.Second

// The environment the OpenTelemetry path reads (Lambda sets the AWS_ ones).
const (
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	envRegion         = "AWS_REGION"
	envAccessKeyID    = "AWS_ACCESS_KEY_ID"
	envSecretKey      = "AWS_SECRET_ACCESS_KEY"
	envSessionToken   = "AWS_SESSION_TOKEN"
	envFunctionName   = "AWS_LAMBDA_FUNCTION_NAME"
	envFunctionVer    = "AWS_LAMBDA_FUNCTION_VERSION"
)

// ScopeName names the tracer of the invocations and the steps.
const ScopeName = "github.com/stellar-transfer/orchestrator/internal/tracing"

// XRayEndpoint is X-Ray's OTLP/HTTP traces endpoint in region (Amazon CloudWatch User Guide,
// "OTLP endpoints"; it takes SigV4 for service "xray" and needs Transaction Search).
func XRayEndpoint(region string) string {
	return "https://xray." + region + ".amazonaws.com/v1/traces"
}

type otelState struct {
	provider   *sdktrace.TracerProvider
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
	logger     *slog.Logger
	// function is AWS_LAMBDA_FUNCTION_NAME, the invocation span's name.
	function string
}

// newOTel builds the provider: the OTLP/HTTP exporter to X-Ray's endpoint (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), signed with SigV4 for AWS_REGION, behind a batch processor;
// ParentBased(NeverSample); X-Ray IDs; the function as the resource. It becomes the global provider
// and the X-Ray propagator the global propagator, for any library that reads them.
func newOTel(getenv func(string) string, logger *slog.Logger) (*otelState, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	region := getenv(envRegion)
	if region == "" {
		return nil, errors.New("tracing: TRACING=otel needs AWS_REGION (the region of X-Ray's OTLP endpoint and of the SigV4 signature)")
	}
	endpoint := getenv(EnvTracesEndpoint)
	if endpoint == "" {
		endpoint = XRayEndpoint(region)
	}
	if err := checkEndpoint(endpoint); err != nil {
		return nil, err
	}
	id, secret := getenv(envAccessKeyID), getenv(envSecretKey)
	if id == "" || secret == "" {
		return nil, errors.New("tracing: TRACING=otel signs its exports with the execution role's credentials, and AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not set")
	}
	// Lambda's execution-role credentials are in the environment for the life of the execution
	// environment (the X-Ray daemon beside the function uses the same ones).
	signing := &sigv4Transport{
		base:        http.DefaultTransport.(*http.Transport).Clone(),
		signer:      v4.NewSigner(),
		credentials: credentials.NewStaticCredentialsProvider(id, secret, getenv(envSessionToken)),
		region:      region,
		now:         time.Now,
	}
	exporter, err := otlptracehttp.New(context.Background(),
		otlptracehttp.WithEndpointURL(endpoint),
		otlptracehttp.WithHTTPClient(&http.Client{Transport: signing, Timeout: ExportTimeout}),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		// No retries: a retry would hold the invocation's answer back (package doc, "Flushing").
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: the OTLP exporter: %w", err)
	}
	function := getenv(envFunctionName)
	service := function
	if service == "" {
		service = "stellar-transfer-orchestrator"
	}
	attrs := []resource.Option{resource.WithAttributes(semconv.ServiceName(service), semconv.CloudProviderAWS,
		semconv.CloudPlatformAWSLambda, semconv.CloudRegion(region))}
	if function != "" {
		attrs = append(attrs, resource.WithAttributes(semconv.FaaSName(function), semconv.FaaSVersion(getenv(envFunctionVer))))
	}
	res, err := resource.New(context.Background(), append(attrs, resource.WithSchemaURL(semconv.SchemaURL))...)
	if err != nil {
		return nil, fmt.Errorf("tracing: the resource: %w", err)
	}
	provider := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exporter, sdktrace.WithExportTimeout(ExportTimeout)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
		sdktrace.WithIDGenerator(xray.NewIDGenerator()),
		sdktrace.WithResource(res),
	)
	o := &otelState{provider: provider, tracer: provider.Tracer(ScopeName), propagator: xray.Propagator{}, logger: logger,
		function: function}
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(o.propagator)
	// The batch processor's background exports report here; the per-invocation flush reports in
	// endInvocation.
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("traces not exported", "err", err)
	}))
	return o, nil
}

// checkEndpoint accepts an https URL, or http to a loopback address (the tests' and the local
// stack's receivers): the spans are not for the network in clear.
func checkEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return fmt.Errorf("tracing: %s is not a URL: %q", EnvTracesEndpoint, clip(endpoint, 200))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); (ip != nil && ip.IsLoopback()) || u.Hostname() == "localhost" {
			return nil
		}
	}
	return fmt.Errorf("tracing: %s must be https (or http to a loopback address): %q", EnvTracesEndpoint, clip(endpoint, 200))
}

func (o *otelState) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), ExportTimeout)
	defer cancel()
	_ = o.provider.Shutdown(ctx)
}

// instrumentAWS appends otelaws's middleware: a CLIENT span "<Service>.<Operation>" per call, and
// X-Amzn-Trace-Id on the request.
func (o *otelState) instrumentAWS(cfg *aws.Config) {
	otelaws.AppendMiddlewares(&cfg.APIOptions, otelaws.WithTracerProvider(o.provider),
		otelaws.WithTextMapPropagator(o.propagator))
}

// httpClient copies c with otelhttp's transport around its own: a CLIENT span "HTTP <method>" per
// request, X-Amzn-Trace-Id on it. otelhttp returns the inner transport's error as it is.
func (o *otelState) httpClient(c *http.Client) *http.Client {
	var cp http.Client
	if c != nil {
		cp = *c
	}
	base := cp.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	cp.Transport = otelhttp.NewTransport(base, otelhttp.WithTracerProvider(o.provider), otelhttp.WithPropagators(o.propagator))
	return &cp
}

func tracedOTel(ctx context.Context) bool {
	return trace.SpanFromContext(ctx).IsRecording()
}

func (o *otelState) startStep(ctx context.Context, step string) (context.Context, func(error)) {
	if !tracedOTel(ctx) {
		return ctx, func(error) {}
	}
	sctx, span := o.tracer.Start(ctx, "transfer."+step, trace.WithSpanKind(trace.SpanKindInternal))
	return sctx, func(err error) { endSpan(span, err) }
}

// endSpan ends span with status Error and err's message when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
