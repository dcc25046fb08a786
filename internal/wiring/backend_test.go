package wiring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
)

// checkOnly is a StellarLedger whose CheckNetwork answers err (nothing else is called).
type checkOnly struct {
	StellarLedger
	err error
}

func (c checkOnly) CheckNetwork(context.Context) error { return c.err }

// A release the proofs cannot work with, or another network, ends the init with the reason; a
// backend that does not answer is a warning.
func TestCheckBackend(t *testing.T) {
	unsupported := &stellar.UnsupportedVersionError{Backend: "stellar-rpc", Reported: "22.1.5", Minimum: stellar.MinRPCRelease}
	cases := []struct {
		name string
		err  error
		exit bool
		log  string
	}{
		{"supported", nil, false, ""},
		{"old release", fmt.Errorf("wrapped: %w", unsupported), true, `reports version \"22.1.5\"; this service supports stellar-rpc 23.0.0 and later`},
		{"other network", fmt.Errorf("%w: RPC serves network %q", stellar.ErrWrongNetwork, "Public"), true, "serves another network"},
		{"unreachable", errors.New("dial tcp: connection refused"), false, "did not answer its start-up check"},
	}
	for _, c := range cases {
		var out bytes.Buffer
		code := -1
		in := &Init{Logger: logging.New(&out, slog.LevelInfo), exit: func(c int) { code = c }}
		in.CheckBackend(checkOnly{err: c.err})
		if (code == 1) != c.exit || !strings.Contains(out.String(), c.log) {
			t.Errorf("%s: exit %d, log %s", c.name, code, out.String())
		}
		if c.exit && !strings.Contains(out.String(), `"msg":"Stellar backend"`) {
			t.Errorf("%s: the step is not named: %s", c.name, out.String())
		}
	}
}
