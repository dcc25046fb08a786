package tracing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// SigningService is the SigV4 service name of X-Ray's OTLP endpoint.
const SigningService = "xray"

// sigv4Transport signs each request with SigV4 for SigningService in region, then sends it on
// base. Our own code because no served module does it for an arbitrary http.Client: the AWS SDK
// signs only its own operations, and the collector's sigv4auth extension is not a library for
// the Go SDK's exporter. The signing itself is the SDK's (v4.Signer.SignHTTP).
type sigv4Transport struct {
	base        http.RoundTripper
	signer      *v4.Signer
	credentials aws.CredentialsProvider
	region      string
	now         func() time.Time
}

// RoundTrip reads the body (the signature covers its SHA-256), signs a clone of req (a
// RoundTripper must not change the request it is given) and sends the clone. The body is closed
// whatever happens, as http.RoundTripper requires.
func (t *sigv4Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("tracing: reading the spans to sign: %w", err)
		}
		body = b
	}
	ctx := req.Context()
	creds, err := t.credentials.Retrieve(ctx)
	if err != nil {
		return nil, fmt.Errorf("tracing: credentials to sign the spans: %w", err)
	}
	signed := req.Clone(ctx)
	signed.Body = io.NopCloser(bytes.NewReader(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	signed.ContentLength = int64(len(body))
	sum := sha256.Sum256(body)
	if err := t.signer.SignHTTP(ctx, creds, signed, hex.EncodeToString(sum[:]), SigningService, t.region, t.now()); err != nil {
		return nil, fmt.Errorf("tracing: signing the spans: %w", err)
	}
	return t.base.RoundTrip(signed)
}
