package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// LambdaHandler is the signature lambda.Start accepts for API Gateway HTTP API events.
type LambdaHandler func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error)

// NewLambdaHandler serves h from API Gateway HTTP API events, payload format 2.0
// (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-develop-integrations-lambda.html).
// aws-lambda-go has no net/http bridge, hence this adapter.
//
// The request: method from requestContext.http.method; URL from rawPath and rawQueryString;
// headers as sent (API Gateway has already joined repeated headers with commas); cookies back into
// one Cookie header; the body base64-decoded when isBase64Encoded; requestContext.requestId in the
// context (a trace ID fallback); requestContext.authorizer.iam.userArn in the context (who a
// DELETE cancels as); and ctx itself as the request's context, so the invocation's
// deadline bounds the handler.
//
// The response: the status (200 if none was written); each header single-valued, repeated
// values joined with ", ", except Set-Cookie, which goes to Cookies; the body as text when it is
// valid UTF-8, else base64 with isBase64Encoded. The returned error is always nil: every failure is
// an HTTP response.
func NewLambdaHandler(h http.Handler) LambdaHandler {
	return func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		ctx = withRequestID(ctx, ev.RequestContext.RequestID)
		if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
			ctx = withCaller(ctx, a.IAM.UserARN)
		}
		rw := &bufferedResponse{header: make(http.Header)}
		req, err := eventRequest(ctx, ev)
		if err != nil {
			// The event itself is unusable (bad base64 or URL): answer as the handler would, the
			// path redacted and clipped as every problem's instance is.
			pd := httpProblem(nil, http.StatusBadRequest, transfer.CodeRequestInvalid, err.Error())
			pd.Instance = instanceOf(lenientUnescape(eventPath(ev)))
			pd.TraceID = traceID(ctx, headerValue(ev.Headers, AmznTraceHeader))
			setCommonHeaders(rw.header, pd.TraceID)
			writeProblem(rw, &http.Request{}, pd)
			return rw.response(false), nil
		}
		h.ServeHTTP(rw, req)
		return rw.response(req.Method == http.MethodHead), nil
	}
}

type adapterError string

func (e adapterError) Error() string { return string(e) }

// eventRequest builds the *http.Request of a payload 2.0 event.
func eventRequest(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	path := eventPath(ev)
	target := path
	if ev.RawQueryString != "" {
		target += "?" + ev.RawQueryString
	}
	// ParseRequestURI, as net/http's server does: "//x" is a path here, not a host.
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, adapterError("the request URL is malformed")
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return nil, adapterError("the request body is not valid base64")
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, "/", bytes.NewReader(body))
	if err != nil {
		return nil, adapterError("the request method is malformed")
	}
	req.URL = u
	req.RequestURI = target
	if p := ev.RequestContext.HTTP.Protocol; p != "" {
		if major, minor, ok := http.ParseHTTPVersion(p); ok {
			req.Proto, req.ProtoMajor, req.ProtoMinor = p, major, minor
		}
	}
	for k, v := range ev.Headers {
		req.Header.Add(k, v)
	}
	if len(ev.Cookies) > 0 {
		req.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	// Like net/http's server: Host moves out of the header map.
	req.Host = req.Header.Get("Host")
	if req.Host == "" {
		req.Host = ev.RequestContext.DomainName
	}
	req.Header.Del("Host")
	if req.Header.Get("Content-Length") != "" {
		req.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	req.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	return req, nil
}

// eventPath is the event's path as sent (rawPath, else requestContext.http.path), rooted.
func eventPath(ev events.APIGatewayV2HTTPRequest) string {
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return path
}

// lenientUnescape decodes every well-formed %XX escape of p and keeps the rest as it is, so that a
// path url.PathUnescape refuses (a stray "%") is still read as a person would read it, for
// redaction: "/%53ABC...%zz" holds the seed "SABC...".
func lenientUnescape(p string) string {
	if !strings.Contains(p, "%") {
		return p
	}
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) && isHex(p[i+1]) && isHex(p[i+2]) {
			b.WriteByte(unhex(p[i+1])<<4 | unhex(p[i+2]))
			i += 2
			continue
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// headerValue looks a header up in an event's map, whose names API Gateway lower-cases.
func headerValue(h map[string]string, name string) string {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// bufferedResponse is an http.ResponseWriter that keeps the response for the event's reply.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.body.Write(p)
}

func (w *bufferedResponse) response(head bool) events.APIGatewayV2HTTPResponse {
	status := w.status
	if status == 0 {
		status = http.StatusOK
	}
	body := w.body.Bytes()
	if w.header.Get("Content-Type") == "" && len(body) > 0 {
		w.header.Set("Content-Type", http.DetectContentType(body))
	}
	resp := events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: make(map[string]string, len(w.header))}
	for k, vs := range w.header {
		if k == "Set-Cookie" {
			resp.Cookies = append(resp.Cookies, vs...)
			continue
		}
		resp.Headers[k] = strings.Join(vs, ", ")
	}
	switch {
	case head:
	case utf8.Valid(body):
		resp.Body = string(body)
	default:
		resp.Body = base64.StdEncoding.EncodeToString(body)
		resp.IsBase64Encoded = true
	}
	return resp
}
