package wiring

import (
	"context"
	"errors"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
)

// backendCheckTimeout bounds the start-up check of the Stellar backend.
const backendCheckTimeout = 10 * time.Second

// CheckBackend reads the Stellar backend's network and release at start (StellarLedger.
// CheckNetwork: getNetwork and getVersionInfo, or Horizon's root). Another network, or a release
// the proofs do not support (*stellar.UnsupportedVersionError: stellar-rpc before 23.0.0,
// Horizon before 22.0.0 or below the network's protocol, or a release it cannot read), is Fatal: the function never takes an
// invocation on it. A backend that cannot be reached now, or answers with an error, is only a
// warning: an outage at a cold
// start must not also stop the calls that need no ledger (replays, status reads), and the ledger
// reads stay sound on any supported release without this check (stellar.RPCLedger reads a
// missing close time with getLedgers, whatever the release).
func (in *Init) CheckBackend(ledger StellarLedger) {
	ctx, cancel := context.WithTimeout(context.Background(), backendCheckTimeout)
	defer cancel()
	err := ledger.CheckNetwork(ctx)
	if err == nil {
		return
	}
	var uv *stellar.UnsupportedVersionError
	if errors.As(err, &uv) || errors.Is(err, stellar.ErrWrongNetwork) {
		in.Fatal("Stellar backend", err)
		return
	}
	in.Logger.Warn("Stellar backend did not answer its start-up check; its network and release are not checked", "err", err)
}
