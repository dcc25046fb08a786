package stellar

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"syscall"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// rpcclient speaks JSON-RPC through jrpc2 over HTTP, and jrpc2 reports a transport failure only
// as the text of a *jrpc2.Error: the *net.OpError that says whether anything was written is lost.
// So every call gets its own rpcclient over an http.Client whose RoundTripper records the
// transport error of that call. A per-call client also keeps one hung request from stalling the
// others: rpcclient replaces its shared jrpc2 client after any error, under a lock, and closing a
// jrpc2 HTTP channel waits for its requests in flight.

// recorder is an http.RoundTripper that keeps the first transport error of its one call. It also
// hands the call's context values (the trace: X-Ray's segment, OpenTelemetry's span) to the
// request, which rpcclient and horizonclient make without the call's context, so that the
// instrumented transport below (internal/tracing.HTTPClient) traces it as part of the call.
type recorder struct {
	base http.RoundTripper
	// call is the call's context; nil hands nothing on.
	call context.Context

	mu  sync.Mutex
	err error
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if r.call != nil {
		req = req.WithContext(callValues{Context: req.Context(), call: r.call})
	}
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

// callValues is a request's context that also answers the call context's values. Its deadline and
// cancellation stay the request's own: binding the request to the call's context is what
// rpcclient and horizonclient do not do, and call and hcall rely on that (see call).
type callValues struct {
	context.Context
	call context.Context
}

func (c callValues) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.call.Value(key)
}

func (r *recorder) transportErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// call runs fn with a fresh rpcclient and returns its result or error; when the HTTP request
// itself failed, the error is that transport error (with its *net.OpError chain), not jrpc2's
// text-only copy of it. It returns when ctx ends even if fn has not: rpcclient does not
// bind the HTTP request to ctx, and after a failed call it closes its jrpc2 client, which waits
// for the request to finish. The abandoned request runs on until the http.Client's Timeout.
func call[T any](ctx context.Context, l *RPCLedger, fn func(context.Context, *rpcclient.Client) (T, error)) (T, error) {
	base := l.cfg.HTTPClient.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	rec := &recorder{base: base, call: ctx}
	hc := *l.cfg.HTTPClient
	hc.Transport = rec
	type outcome struct {
		v   T
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		c := rpcclient.NewClient(l.cfg.URL, &hc)
		v, err := fn(ctx, c)
		done <- outcome{v, err}
		_ = c.Close()
	}()
	var zero T
	select {
	case o := <-done:
		if o.err != nil {
			if terr := rec.transportErr(); terr != nil {
				return zero, terr
			}
			// The server answered, but with an error status, a JSON-RPC error or a body that
			// does not parse.
			return zero, fmt.Errorf("%w: %w", transfer.ErrUnexpectedAnswer, o.err)
		}
		return o.v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
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
