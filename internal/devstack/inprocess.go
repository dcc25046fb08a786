package devstack

import (
	"net/http"
	"net/http/httptest"
)

// handlerTransport is an http.RoundTripper that serves each request with an http.Handler in the
// calling goroutine, without a socket: with Options.InProcessDynamo the service's DynamoDB client
// reaches minidyn's HTTP handler through it. The SDK still serializes every request and parses every answer as it would
// over the network (status, headers, body), and minidyn still parses the request and writes its
// answer as an HTTP server; only the loopback connection, the server's connection goroutines and
// the client's connection pool are skipped. The profile of the fault campaign (internal/chaos)
// under -race put about a third of its CPU in that transport (syscalls, net/http's read and write
// loops, the server's request parsing), mostly the item reads of callers coalescing on a held
// claim.
//
// Own code rather than a library's: net/http/httptest offers the recorder but no round tripper
// over a handler, and the ones in other modules add nothing over these lines.
type handlerTransport struct{ h http.Handler }

// inProcessDynamoURL is the DynamoDB endpoint with Options.InProcessDynamo: a name only, which
// never resolves (.invalid, RFC 6761), served by handlerTransport.
const inProcessDynamoURL = "http://minidyn.devstack.invalid"

// RoundTrip hands req to the handler as a server would (RequestURI set, the body read by the
// handler) and returns the recorded answer; the handler's answer is complete when ServeHTTP
// returns, so the response body is a buffer. A request whose context has ended is not served,
// and one whose context ends while it is served gets the context's error, as an HTTP client
// answers then.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	in := req.Clone(req.Context())
	in.RequestURI = req.URL.RequestURI()
	in.RemoteAddr = "127.0.0.1:0"
	if in.Host == "" {
		in.Host = req.URL.Host
	}
	if in.Body == nil {
		in.Body = http.NoBody
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, in)
	_ = in.Body.Close()
	if err := req.Context().Err(); err != nil {
		// Over a socket the client gives up when the context ends, whatever the server did:
		// the answer is lost, the request may have applied.
		return nil, err
	}
	res := rec.Result()
	res.Request = req
	return res, nil
}
