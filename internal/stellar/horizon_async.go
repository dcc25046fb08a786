package stellar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/protocols/stellarcore"
)

// POST /transactions_async is sent and read here rather than with horizonclient's
// AsyncSubmitTransactionXDR: go-stellar-sdk v0.7.3 (clients/horizonclient/internal.go,
// isAsyncTxSubRequest) decodes a non-2xx answer as the endpoint's own body only when the request
// URL's path is exactly "/transactions_async". Behind a path prefix (HORIZON_URL=
// https://gw.example/horizon) every 503 TRY_AGAIN_LATER and 400 ERROR came back as a generic
// problem, that is as an unexpected answer: an envelope the network refused on its first send
// stayed in doubt until its maxTime. Reading the body here works whatever the path, and binds
// the request to the caller's context (horizonclient takes none).

// maxAsyncAnswer bounds the body read from POST /transactions_async: the endpoint's answer is a
// hash, a status and at most one TransactionResult (a few hundred bytes); a problem echoes the
// envelope. Anything longer is not Horizon's answer.
const maxAsyncAnswer = 1 << 20

// asyncBody is Horizon's answer to POST /transactions_async (protocols/horizon
// AsyncTransactionSubmissionResponse), plus errorResultXdr, the name Horizon before v23 also
// wrote the TransactionResult under (services/horizon/internal/actions/submit_transaction_async.go,
// AsyncSubmitTransactionHandler.GetResource: DeprecatedErrorResultXDR).
type asyncBody struct {
	hProtocol.AsyncTransactionSubmissionResponse
	DeprecatedErrorResultXDR string `json:"errorResultXdr,omitempty"`
}

// postAsync POSTs tx=<xdr> (a form, as horizonclient's submitRequest does) to the Horizon URL's
// transactions_async, under ctx, and returns the HTTP status and at most maxAsyncAnswer bytes of
// the body. err is the transport error (a *url.Error wrapping the *net.OpError, so nothingWritten
// can tell a connection never made) or the context's.
func (l *HorizonLedger) postAsync(ctx context.Context, envelopeXDR string) (int, []byte, error) {
	form := url.Values{"tx": {envelopeXDR}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.cfg.URL+"transactions_async", strings.NewReader(form))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := l.cfg.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAsyncAnswer+1))
	if err != nil {
		// The answer was cut off: whatever it said is unknown.
		return 0, nil, fmt.Errorf("reading the answer (HTTP %d): %w", resp.StatusCode, err)
	}
	return resp.StatusCode, body, nil
}

// asyncAnswer reads the body of an answer to POST /transactions_async whose HTTP status is
// status. It is the endpoint's own answer only when tx_status is one of stellar-core's four
// (PENDING, DUPLICATE, TRY_AGAIN_LATER, ERROR), the HTTP status is the one Horizon renders for it
// (201, 409, 503, 400: protocols/horizon AsyncTransactionSubmissionResponse.GetStatus) and the
// hash is set. Anything else (a problem such as stale_history, a proxy's page, a cut-off body) is
// an error naming what came back.
func asyncAnswer(status int, body []byte) (hProtocol.AsyncTransactionSubmissionResponse, error) {
	var zero hProtocol.AsyncTransactionSubmissionResponse
	if len(body) > maxAsyncAnswer {
		return zero, fmt.Errorf("an answer over %d bytes", maxAsyncAnswer)
	}
	var b asyncBody
	if err := json.Unmarshal(body, &b); err != nil {
		return zero, errors.New("an answer that is not JSON")
	}
	r := b.AsyncTransactionSubmissionResponse
	switch r.TxStatus {
	case stellarcore.TXStatusPending, stellarcore.TXStatusDuplicate, stellarcore.TXStatusTryAgainLater, stellarcore.TXStatusError:
	case "":
		var p struct{ Type, Title string }
		_ = json.Unmarshal(body, &p)
		return zero, fmt.Errorf("a problem (type %q, title %q), not a submission status", clipText(p.Type), clipText(p.Title))
	default:
		return zero, fmt.Errorf("unknown tx_status %q", clipText(r.TxStatus))
	}
	if r.GetStatus() != status {
		return zero, fmt.Errorf("tx_status %s with HTTP %d (Horizon answers it with %d)", r.TxStatus, status, r.GetStatus())
	}
	if r.Hash == "" {
		return zero, fmt.Errorf("tx_status %s without a hash", r.TxStatus)
	}
	if r.ErrorResultXDR == "" {
		r.ErrorResultXDR = b.DeprecatedErrorResultXDR
	}
	return r, nil
}

// clipText keeps at most 80 bytes of a string read from an answer, for an error message.
func clipText(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
