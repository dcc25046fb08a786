package wiring

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// Rule: the service never takes an invocation on a stellar-rpc release it cannot read (Init.
// CheckBackend). A soroban-rpc before 21.1.0 answers getNetwork but has no getVersionInfo (JSON-RPC
// -32601 method not found) and no getLedgers: on it the death proof's close time is never known.
// Its answer is not an outage: the init ends, naming what is supported.
func TestCheckBackendRefusesRPCWithoutGetVersionInfo(t *testing.T) {
	const pass = "Test SDF Network ; September 2015"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"getNetwork"`) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"passphrase":%q,"protocolVersion":20}}`, pass)
			return
		}
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`)
	}))
	t.Cleanup(srv.Close)
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: srv.URL, Passphrase: pass, VaultAccount: keypair.MustRandom().Address(),
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}}, Keys: signing.StaticKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	code := -1
	in := &Init{Logger: logging.New(&out, slog.LevelInfo), exit: func(c int) { code = c }}
	in.CheckBackend(checkOnly{err: l.CheckNetwork(context.Background())})
	if code != 1 || !strings.Contains(out.String(), "supports stellar-rpc 23.0.0 and later") {
		t.Errorf("exit %d, log %s; want the init ended naming the supported releases", code, out.String())
	}
}
