package stellar

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
)

type traceKey struct{}

// valueSeen is the transport under the recorder (where internal/tracing's instrumentation sits):
// it records the trace value each request's context carries.
type valueSeen struct {
	mu   sync.Mutex
	seen []any
}

func (v *valueSeen) RoundTrip(req *http.Request) (*http.Response, error) {
	v.mu.Lock()
	v.seen = append(v.seen, req.Context().Value(traceKey{}))
	v.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

// rpcclient and horizonclient make their requests without the call's context; the call's values
// (the trace) still reach the transport, so the Stellar requests are traced inside the call.
func TestCallsHandTheTraceToTheTransport(t *testing.T) {
	fake, srv := newFakeRPC(t)
	fake.answer("getLatestLedger", protocol.GetLatestLedgerResponse{Sequence: 77, LedgerCloseTime: 1_700_000_000})
	seen := &valueSeen{}
	ctx := context.WithValue(context.Background(), traceKey{}, "the invocation's span")

	rl := &RPCLedger{cfg: RPCConfig{URL: srv.URL, HTTPClient: &http.Client{Transport: seen}}}
	if _, err := call(ctx, rl, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	// Horizon's root, answered by the same server with a JSON-RPC error body: only the request
	// matters here.
	hl := &HorizonLedger{cfg: HorizonConfig{URL: srv.URL + "/", HTTPClient: &http.Client{Transport: seen}}}
	_, _ = hcall(ctx, hl, func(c *horizonclient.Client) (hProtocol.Root, error) { return c.Root() })

	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.seen) != 2 || seen.seen[0] != "the invocation's span" || seen.seen[1] != "the invocation's span" {
		t.Fatalf("the transport saw %v, want the call's value on both requests", seen.seen)
	}
}
