package stellar

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"syscall"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
)

// rpcclient speaks JSON-RPC through jrpc2 over HTTP, and jrpc2 reports a transport failure only
// as the text of a *jrpc2.Error: the *net.OpError that says whether anything was written is lost.
// So every call gets its own rpcclient over an http.Client whose RoundTripper records the
// transport error of that call. A per-call client also keeps one hung request from stalling the
// others: rpcclient replaces its shared jrpc2 client after any error, under a lock, and closing a
// jrpc2 HTTP channel waits for its requests in flight.

// recorder is an http.RoundTripper that keeps the first transport error of its one call.
type recorder struct {
	base http.RoundTripper

	mu  sync.Mutex
	err error
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.base.RoundTrip(req)
	if err != nil {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) transportErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// call runs fn with a fresh rpcclient and returns fn's error and the transport error recorded
// during it, if any.
func (l *RPCLedger) call(ctx context.Context, fn func(*rpcclient.Client) error) (err, transportErr error) {
	base := l.cfg.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rec := &recorder{base: base}
	hc := *l.cfg.HTTPClient
	hc.Transport = rec
	c := rpcclient.NewClient(l.cfg.URL, &hc)
	err = fn(c)
	// Close waits for the HTTP request to finish, which may outlive ctx (jhttp does not bind
	// requests to it); the http.Client's Timeout bounds it.
	go func() { _ = c.Close() }()
	if err != nil {
		return err, rec.transportErr()
	}
	return nil, nil
}

// nothingWritten reports whether a transport error proves the request never left this host:
// the connection was never made (refused, no route, DNS failure, dial timeout). Go's
// http.Transport retries a POST on a new connection only after a failure that wrote nothing, so
// a dial error on the last attempt means no attempt wrote the request.
func nothingWritten(err error) bool {
	if err == nil {
		return false
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
