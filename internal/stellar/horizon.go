package stellar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/protocols/stellarcore"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// HorizonConfig configures a HorizonLedger; the fields mean what RPCConfig's do.
type HorizonConfig struct {
	// URL is the Horizon root (HORIZON_URL).
	URL string
	// HTTPClient carries the requests; nil means one with DefaultHTTPTimeout.
	HTTPClient     *http.Client
	Passphrase     string
	VaultAccount   string
	Assets         []txnbuild.CreditAsset
	BaseFeeStroops int64
	MaxFeeStroops  int64
	// BatchPayments is RPCConfig.BatchPayments.
	BatchPayments  int
	FeePercentile  int
	Keys           signing.KeySource
	Channels       *sources.ChannelPool
	Clock          transfer.Clock
	LedgerInterval func() time.Duration
}

// HorizonLedger is a transfer.Ledger over Horizon (STELLAR_BACKEND=horizon): the same envelopes
// as RPCLedger, sent with POST /transactions_async (posted and read here, bound to the caller's
// context: see horizon_async.go) and looked up with GET /transactions/{hash}. The other calls go
// through horizonclient, whose methods take no context, so each runs under the caller's deadline
// here (the abandoned request runs on until the HTTP client's Timeout). The Horizon URL may have a
// path (a gateway's prefix). Safe for concurrent use.
type HorizonLedger struct {
	cfg HorizonConfig
	*common
	// rates are the classic clearing rates of the ledgers the fee stats last read (horizon_fees.go).
	rates classicRates
}

var _ transfer.Ledger = (*HorizonLedger)(nil)

// NewHorizonLedger checks cfg and returns a ledger. It makes no network call; see CheckNetwork.
func NewHorizonLedger(cfg HorizonConfig) (*HorizonLedger, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errors.New("stellar: the Horizon URL is not an http(s) URL")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	cfg.URL = strings.TrimSuffix(cfg.URL, "/") + "/"
	c, err := newCommon(cfg.Passphrase, cfg.VaultAccount, cfg.Assets, cfg.BaseFeeStroops, cfg.MaxFeeStroops,
		cfg.FeePercentile, cfg.Keys, cfg.Channels, cfg.Clock, cfg.LedgerInterval)
	if err != nil {
		return nil, err
	}
	c.batchPayments = int64(max(cfg.BatchPayments, 1))
	return &HorizonLedger{cfg: cfg, common: c}, nil
}

// hcall runs fn with a fresh horizonclient whose transport records its transport error (so Send
// can tell a request that was never written), and returns when ctx ends even if fn has not.
func hcall[T any](ctx context.Context, l *HorizonLedger, fn func(*horizonclient.Client) (T, error)) (T, error) {
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
		v, err := fn(&horizonclient.Client{HorizonURL: l.cfg.URL, HTTP: &hc})
		done <- outcome{v, err}
	}()
	var zero T
	select {
	case o := <-done:
		if o.err != nil {
			if terr := rec.transportErr(); terr != nil {
				return zero, terr
			}
			return zero, o.err
		}
		return o.v, nil
	case <-ctx.Done():
		return zero, ctx.Err()
	}
}

// CheckNetwork reads Horizon's root (GET /: network_passphrase, horizon_version,
// current_protocol_version, supported_protocol_version) and fails if it serves another network
// (ErrWrongNetwork), or with an *UnsupportedVersionError when its horizon_version is before
// MinHorizonRelease or cannot be read, or when it cannot ingest the network's protocol
// (checkHorizonRoot, versions.go). A root that cannot be read is a plain error.
func (l *HorizonLedger) CheckNetwork(ctx context.Context) error {
	root, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Root, error) { return c.Root() })
	if err != nil {
		return fmt.Errorf("stellar: Horizon root: %w", err)
	}
	if root.NetworkPassphrase != l.cfg.Passphrase {
		return fmt.Errorf("%w: Horizon serves network %q, configured %q", ErrWrongNetwork, root.NetworkPassphrase, l.cfg.Passphrase)
	}
	return checkHorizonRoot(root.HorizonVersion, int32(root.CurrentProtocolVersion), int32(root.SupportedProtocolVersion))
}

// Prepare builds and signs the envelope exactly as RPCLedger.Prepare does, reading sequence
// numbers (GET /accounts/{id}), the latest ledger (GET /ledgers?order=desc&limit=1) and the
// classic lane's clearing rates (GET /ledgers and /ledgers/{seq}/transactions: horizon_fees.go)
// from Horizon.
func (l *HorizonLedger) Prepare(ctx context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	return l.prepare(ctx, horizonChain{l}, req, terms)
}

// EnsureChannels lists the channel accounts and creates the missing ones on chain (see
// RPCLedger.EnsureChannels).
func (l *HorizonLedger) EnsureChannels(ctx context.Context) ([]ChannelAccount, error) {
	return l.ensureChannels(ctx, horizonChain{l}, l)
}

// Done releases the envelope's channel lease (see RPCLedger.Done).
func (l *HorizonLedger) Done(ctx context.Context, env transfer.Envelope) {
	l.guard.forget(env)
	l.source.Release(ctx, sources.Lease{}, env)
}

type horizonChain struct{ l *HorizonLedger }

func (h horizonChain) sequence(ctx context.Context, account string) (int64, error) {
	a, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.Account, error) {
		return c.AccountDetail(horizonclient.AccountRequest{AccountID: account})
	})
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return 0, &transfer.UnavailableError{Code: transfer.CodeNetworkUnavailable,
				Detail: "the transaction source account (vault or channel) does not exist on the network",
				Err:    fmt.Errorf("%w: %s", ErrAccountMissing, account)}
		}
		return 0, fmt.Errorf("stellar: GET /accounts/%s: %w", account, err)
	}
	return a.Sequence, nil
}

func (h horizonChain) latest(ctx context.Context) (uint32, time.Time, error) {
	page, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.LedgersPage, error) {
		return c.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 1})
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("stellar: GET /ledgers: %w", err)
	}
	if len(page.Embedded.Records) == 0 || page.Embedded.Records[0].Sequence <= 0 {
		return 0, time.Time{}, errors.New("stellar: GET /ledgers returned no ledger")
	}
	r := page.Embedded.Records[0]
	h.l.reserve.observe(int64(r.BaseReserve), h.l.clock.Now())
	return uint32(r.Sequence), r.ClosedAt.UTC(), nil
}

// Send submits env.XDR once with POST /transactions_async and maps Horizon's answer
// (internal/transfer/doc.go, "Classification"): 201 PENDING, 409 DUPLICATE, 503 TRY_AGAIN_LATER
// and 400 ERROR (with the
// transaction-level code from error_result_xdr, e.g. "txBAD_SEQ") as the RPC backend reports
// them; 429 (rate limited, never forwarded to the network) as TRY_AGAIN_LATER, which the domain
// treats as a refusal only on a first send. stellar-core's TRY_AGAIN_LATER (not a 429) to an
// envelope whose source is the vault also sets SourceBusy (common.sourceBusy). A 504, 500 or any
// other answer (a problem, even with status 400 or 503, such as stale_history or a gateway's own
// error) is an error wrapping
// transfer.ErrUnexpectedAnswer: the envelope may have reached the network, so the same envelope
// is sent again. A connection that was never made wraps transfer.ErrNotSent. LatestLedger is read
// after the answer (GET /ledgers). The request is bound to ctx.
func (l *HorizonLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	if env.XDR == "" {
		return transfer.SendResult{}, fmt.Errorf("stellar: envelope has no XDR: %w", transfer.ErrNotSent)
	}
	status, body, err := l.postAsync(ctx, env.XDR)
	var res transfer.SendResult
	switch {
	case err != nil && nothingWritten(err):
		return transfer.SendResult{}, fmt.Errorf("stellar: POST /transactions_async %s: %w (%w)", env.InnerHash, transfer.ErrNotSent, err)
	case err != nil:
		return transfer.SendResult{}, fmt.Errorf("stellar: POST /transactions_async %s: %w", env.InnerHash, err)
	case status == http.StatusTooManyRequests:
		res.Status = transfer.SendTryAgainLater
	default:
		resp, err := asyncAnswer(status, body)
		if err != nil {
			return transfer.SendResult{}, fmt.Errorf("stellar: POST /transactions_async %s (HTTP %d): %w: %w", env.InnerHash, status, transfer.ErrUnexpectedAnswer, err)
		}
		switch resp.TxStatus {
		case stellarcore.TXStatusPending:
			res.Status = transfer.SendPending
		case stellarcore.TXStatusDuplicate:
			res.Status = transfer.SendDuplicate
		case stellarcore.TXStatusTryAgainLater:
			res.Status = transfer.SendTryAgainLater
		case stellarcore.TXStatusError:
			res.Status = transfer.SendError
			var tr xdr.TransactionResult
			if resp.ErrorResultXDR != "" && xdr.SafeUnmarshalBase64(resp.ErrorResultXDR, &tr) == nil {
				res.Code = TxCode(tr)
			}
			if res.Code == "txINSUFFICIENT_FEE" {
				l.refusedAsTooLow(env, tr)
			}
		}
		if !slices.Contains(sentHashes(env), strings.ToLower(resp.Hash)) {
			return transfer.SendResult{}, fmt.Errorf("stellar: %w: POST /transactions_async answered %s for hash %s, not the envelope's %v", transfer.ErrUnexpectedAnswer, resp.TxStatus, resp.Hash, sentHashes(env))
		}
	}
	if seq, closed, err := (horizonChain{l}).latest(ctx); err == nil {
		res.LatestLedger, res.LatestLedgerCloseTime = seq, closed
	}
	if res.Status == transfer.SendTryAgainLater && status != http.StatusTooManyRequests {
		res.SourceBusy = l.sourceBusy(env, res.LatestLedgerCloseTime)
	}
	return res, nil
}

// Lookup asks GET /transactions/{hash} for env.InnerHash, then each of env.Outers() (every fee
// bump sent around it, oldest first; 404 = not found).
// The history facts come from Horizon's root: the latest ledger and its close time read before
// the lookups (so the lookups saw at least that far), history_elder_ledger read after them (so no
// ledger the lookups missed is claimed as covered).
func (l *HorizonLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if env.InnerHash == "" {
		return transfer.Lookup{}, errors.New("stellar: envelope has no hash")
	}
	before, err := l.root(ctx)
	if err != nil {
		return transfer.Lookup{}, err
	}
	lk := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: uint32(max(before.HorizonSequence, 0)),
		LatestLedgerCloseTime: before.HorizonLatestClosedAt.UTC(), OldestLedger: uint32(max(before.HistoryElderSequence, 0))}
	for _, hash := range env.Hashes() {
		tx, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Transaction, error) { return c.TransactionDetail(hash) })
		if horizonclient.IsNotFoundError(err) {
			continue
		}
		if err != nil {
			return transfer.Lookup{}, fmt.Errorf("stellar: GET /transactions/%s: %w", hash, err)
		}
		return foundTx(lk, hash, tx)
	}
	after, err := l.root(ctx)
	if err != nil {
		return transfer.Lookup{}, err
	}
	lk.OldestLedger = max(lk.OldestLedger, uint32(max(after.HistoryElderSequence, 0)))
	return lk, nil
}

func (l *HorizonLedger) root(ctx context.Context) (hProtocol.Root, error) {
	r, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Root, error) { return c.Root() })
	if err != nil {
		return hProtocol.Root{}, fmt.Errorf("stellar: Horizon root: %w", err)
	}
	return r, nil
}

func foundTx(lk transfer.Lookup, hash string, tx hProtocol.Transaction) (transfer.Lookup, error) {
	lk.Hash, lk.Ledger, lk.FeeChargedStroops = hash, uint32(tx.Ledger), tx.FeeCharged
	lk.Status = transfer.LookupSuccess
	if lk.Ledger > lk.LatestLedger {
		lk.LatestLedger = lk.Ledger
	}
	if tx.Successful {
		return lk, nil
	}
	lk.Status = transfer.LookupFailed
	_, codes, err := failedCodesOf(tx.ResultXdr)
	if err != nil {
		return transfer.Lookup{}, fmt.Errorf("stellar: GET /transactions/%s: decoding result_xdr: %w", hash, err)
	}
	lk.ResultCodes = codes
	return lk, nil
}

// LatestLedger reads Horizon's root: the latest ledger Horizon ingested and its close time
// (transfer.LatestReader; the await loop probes with it between Lookups).
func (l *HorizonLedger) LatestLedger(ctx context.Context) (transfer.LedgerInfo, error) {
	r, err := l.root(ctx)
	if err != nil {
		return transfer.LedgerInfo{}, err
	}
	return transfer.LedgerInfo{Sequence: uint32(max(r.HorizonSequence, 0)), CloseTime: r.HorizonLatestClosedAt.UTC()}, nil
}

var _ transfer.LatestReader = (*HorizonLedger)(nil)
