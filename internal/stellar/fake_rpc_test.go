package stellar

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fakeRPC is a minimal JSON-RPC 2.0 server for unit tests: one handler per method.
type fakeRPC struct {
	mu       sync.Mutex
	handlers map[string]func(params json.RawMessage) (any, *rpcError)
	calls    []string
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func newFakeRPC(t *testing.T) (*fakeRPC, *httptest.Server) {
	f := &fakeRPC{handlers: map[string]func(json.RawMessage) (any, *rpcError){}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeRPC) handle(method string, h func(params json.RawMessage) (any, *rpcError)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.handlers[method] = h
}

// answer makes method always return result.
func (f *fakeRPC) answer(method string, result any) {
	f.handle(method, func(json.RawMessage) (any, *rpcError) { return result, nil })
}

func (f *fakeRPC) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeRPC) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, req.Method)
	h := f.handlers[req.Method]
	f.mu.Unlock()
	resp := map[string]any{"jsonrpc": "2.0", "id": req.ID}
	if h == nil {
		resp["error"] = rpcError{Code: -32601, Message: "method not found"}
	} else if result, rerr := h(req.Params); rerr != nil {
		resp["error"] = rerr
	} else {
		resp["result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
