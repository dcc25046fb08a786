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

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/protocols/stellarcore"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// DefaultHTTPTimeout bounds one RPC request when RPCConfig.HTTPClient is nil. It also bounds how
// long a request abandoned by its context keeps running (rpcclient does not cancel it).
const DefaultHTTPTimeout = 30 * time.Second

// CodeSigningKeysUnavailable is the *transfer.UnavailableError code when the signing keys cannot
// be loaded (503, retryable: nothing was built or sent).
const CodeSigningKeysUnavailable = transfer.CodeSigningKeysUnavailable

// ErrAccountMissing is wrapped by the *transfer.UnavailableError Prepare returns when the
// transaction's source account does not exist on the network.
var ErrAccountMissing = errors.New("stellar: source account not found on the network")

// RPCConfig configures an RPCLedger.
type RPCConfig struct {
	// URL is the Stellar RPC endpoint (STELLAR_RPC_URL).
	URL string
	// HTTPClient carries the RPC requests; nil means one with DefaultHTTPTimeout. Set a Timeout:
	// it bounds requests that outlive their context.
	HTTPClient *http.Client
	// Passphrase is the network passphrase (NETWORK_PASSPHRASE); it binds the hashes and
	// signatures to the network.
	Passphrase string
	// VaultAccount is the vault's G... account (VAULT_ACCOUNT).
	VaultAccount string
	// Assets are the credit assets the vault pays out, one per code.
	Assets []txnbuild.CreditAsset
	// BaseFeeStroops is the fee offered per operation, in stroops; 0 means txnbuild.MinBaseFee (100).
	BaseFeeStroops int64
	// MaxFeeStroops caps what one transfer may be charged, in stroops (MAX_FEE_STROOPS): an
	// envelope of n payments may be charged n times it; 0 means no cap beyond the base fee.
	MaxFeeStroops int64
	// BatchPayments is the most payments one envelope of the deployment holds (BATCH_SIZE; 0
	// means 1): the fee account's check counts another process's queued envelope at up to
	// BatchPayments x MaxFeeStroops (feeguard.go).
	BatchPayments int
	// FeePercentile, when set, raises the fee offered to the network's recent inclusion fee at
	// that percentile (getFeeStats; 10, 20, ..., 90, 95 or 99; FEE_PERCENTILE), within
	// MaxFeeStroops. 0 offers BaseFeeStroops.
	FeePercentile int
	// Keys supplies the signing keys, read on every Prepare. Keys.Vault must be a signer of
	// VaultAccount (usually its master key); if it is not, the network refuses the envelope
	// with txBAD_AUTH.
	Keys signing.KeySource
	// Channels, when set, leases a channel account as each transaction's source and wraps the
	// transaction in a fee bump paid by Keys.Fee; nil makes the vault the source (one
	// transaction per ledger).
	Channels *sources.ChannelPool
	// Clock is the time leases and fee stats are judged by; nil means the system clock.
	Clock transfer.Clock
	// LedgerInterval returns the ledger interval as this process sees it; nil, or a result <= 0,
	// means DefaultLedgerInterval. Without channels it bounds how long Prepare waits for this
	// process's vault slot and sets the Retry-After of a busy vault (CHANNELS_BUSY); with
	// channels, ChannelPoolConfig.LedgerInterval does.
	LedgerInterval func() time.Duration
	// LoadBalanced says URL is served by several RPC instances that may lag each other
	// (STELLAR_RPC_LOAD_BALANCED). A NOT_FOUND answer and a ledger read from another instance prove
	// nothing together, so death is then proven only by the source account's sequence number
	// (transfer.Lookup.SourceNotAdvanced), never by history coverage (README, "Which RPC and
	// Horizon deployments the proof supports").
	LoadBalanced bool
}

// RPCLedger is a transfer.Ledger over Stellar RPC. It is safe for concurrent use.
type RPCLedger struct {
	cfg RPCConfig
	*common
	closeTimes ledgerCloseTimes // getLedgers' close times, for releases without closeTime (rpcLatest)
}

var _ transfer.Ledger = (*RPCLedger)(nil)

// NewRPCLedger checks cfg and returns a ledger. It makes no network call; see CheckNetwork.
func NewRPCLedger(cfg RPCConfig) (*RPCLedger, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not echoed: a URL can carry an API key.
		return nil, errors.New("stellar: the RPC URL is not an http(s) URL")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	c, err := newCommon(cfg.Passphrase, cfg.VaultAccount, cfg.Assets, cfg.BaseFeeStroops, cfg.MaxFeeStroops,
		cfg.FeePercentile, cfg.Keys, cfg.Channels, cfg.Clock, cfg.LedgerInterval)
	if err != nil {
		return nil, err
	}
	c.batchPayments = int64(max(cfg.BatchPayments, 1))
	return &RPCLedger{cfg: cfg, common: c}, nil
}

// CheckNetwork asks the RPC server for its network passphrase and fails if it is not the
// configured one (a mismatch would make every signature invalid), then for its release
// (getVersionInfo) and fails with an *UnsupportedVersionError before MinRPCRelease or when the
// release cannot be read (versions.go).
func (l *RPCLedger) CheckNetwork(ctx context.Context) error {
	got, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetNetworkResponse, error) {
		return c.GetNetwork(ctx)
	})
	if err != nil {
		return fmt.Errorf("stellar: getNetwork: %w", err)
	}
	if got.Passphrase != l.cfg.Passphrase {
		return fmt.Errorf("%w: RPC serves network %q, configured %q", ErrWrongNetwork, got.Passphrase, l.cfg.Passphrase)
	}
	return l.checkVersion(ctx)
}

// Prepare builds and signs the envelope for req: a withdraw is one Payment of req.Stroops of the
// asset from the vault to the wallet (a G... account), timebounds {0, maxTime}.
//
// Without channels the vault is the transaction source, with its sequence number as the network
// has it now, and the fee is the base fee (or the inclusion fee at FeePercentile) per operation.
// With channels (RPCConfig.Channels) a channel account is leased first (until the invocation's
// deadline, quarantined until a ledger closes after maxTime unless Done releases it sooner), its
// sequence number is read from the network, the payment's source stays the vault, the channel and
// the vault sign, and a fee bump paid and signed by the fee account wraps it: InnerHash is the
// payment's hash (the transfer's identity), OuterHash the fee bump's, FeeStroops the most the fee
// bump can charge (within MaxFeeStroops). Without channels this process builds on the vault for
// one transfer at a time (sources.VaultSource): Prepare waits up to a ledger interval for the
// others.
// SubmittedLedger is the latest ledger read before the source was acquired. Nothing is sent.
//
// The asset is the configured one whose code equals req.Asset ignoring case, paid under its code
// exactly as configured; the destination is the wallet's canonical strkey.
//
// Errors: *transfer.ValidationError (422) for what this ledger cannot do (deposits need the
// Soroban vault contract; withdrawals to C... contracts too), for a wallet that is not a
// well-formed G... account (the text is checked before it is decoded) or is the vault, the
// asset's issuer, the fee account or a channel account (compared decoded, whatever the spelling),
// and for an unknown asset or a zero amount; *transfer.UnavailableError when the
// keys cannot be loaded, no source is free within a ledger interval (CodeChannelsBusy, with a
// RetryAfter: sources.ChannelPool.Acquire, sources.VaultSource) or the source account does not
// exist; a wrapped error when the RPC could not be reached or answered wrongly.
func (l *RPCLedger) Prepare(ctx context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	return l.prepare(ctx, rpcChain{l}, req, terms)
}

// rpcChain reads what Prepare needs through Stellar RPC.
type rpcChain struct{ l *RPCLedger }

func (r rpcChain) sequence(ctx context.Context, account string) (int64, error) {
	return r.l.sequence(ctx, account)
}

func (r rpcChain) latest(ctx context.Context) (uint32, time.Time, error) {
	return r.l.rpcLatest(ctx)
}

// feeStats reads getFeeStats: inclusionFee (classic, per operation) and sorobanInclusionFee
// (Soroban, per transaction: one operation) as the two lanes (fees.go on fee bumps).
func (r rpcChain) feeStats(ctx context.Context) (marketFees, error) {
	resp, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetFeeStatsResponse, error) {
		return c.GetFeeStats(ctx)
	})
	if err != nil {
		return marketFees{}, fmt.Errorf("stellar: getFeeStats: %w", err)
	}
	dist := func(d protocol.FeeDistribution) feeDistribution {
		return newFeeDistribution(int64(d.P10), int64(d.P20), int64(d.P30), int64(d.P40), int64(d.P50), int64(d.P60),
			int64(d.P70), int64(d.P80), int64(d.P90), int64(d.P95), int64(d.P99))
	}
	var m marketFees
	m[laneClassic], m[laneSoroban] = dist(resp.InclusionFee), dist(resp.SorobanInclusionFee)
	return m, nil
}

// sequence reads account's current sequence number (getLedgerEntries).
func (l *RPCLedger) sequence(ctx context.Context, account string) (int64, error) {
	seq, _, err := l.sequenceAt(ctx, account)
	return seq, err
}

// sequenceAt reads account's sequence number and the ledger of the snapshot it was read from
// (getLedgerEntries' latestLedger: one answer, one consistent state).
func (l *RPCLedger) sequenceAt(ctx context.Context, account string) (int64, uint32, error) {
	id, err := xdr.AddressToAccountId(account)
	if err != nil {
		return 0, 0, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	key, err := id.LedgerKey()
	if err != nil {
		return 0, 0, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	keyB64, err := xdr.MarshalBase64(key)
	if err != nil {
		return 0, 0, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: []string{keyB64}})
	})
	if err != nil {
		return 0, 0, fmt.Errorf("stellar: getLedgerEntries for %s: %w", account, err)
	}
	if len(resp.Entries) == 0 {
		return 0, 0, &transfer.UnavailableError{Code: transfer.CodeNetworkUnavailable,
			Detail: "the transaction source account (vault or channel) does not exist on the network",
			Err:    fmt.Errorf("%w: %s", ErrAccountMissing, account)}
	}
	var entry xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &entry); err != nil {
		return 0, 0, fmt.Errorf("stellar: decoding account %s: %w", account, err)
	}
	if entry.Account == nil {
		return 0, 0, fmt.Errorf("stellar: getLedgerEntries for %s returned a %s entry", account, entry.Type)
	}
	return int64(entry.Account.SeqNum), resp.LatestLedger, nil
}

func closeTime(epoch int64) time.Time {
	if epoch <= 0 {
		return time.Time{}
	}
	return time.Unix(epoch, 0).UTC()
}

// Send submits env.XDR once (sendTransaction) and reports the network's answer: PENDING,
// DUPLICATE, TRY_AGAIN_LATER, or ERROR with the transaction-level code in stellar-core's spelling
// ("txBAD_SEQ"; a fee bump's inner code). Code is "" when an ERROR's result cannot be decoded.
// A TRY_AGAIN_LATER to an envelope whose source is the vault sets SourceBusy (common.sourceBusy).
//
// A transport failure that provably wrote nothing (the connection was never made) wraps
// transfer.ErrNotSent. Every other error (timeout, dropped connection, HTTP 5xx, a malformed or
// unexpected answer) is plain: the envelope may have reached the network.
func (l *RPCLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	if env.XDR == "" {
		return transfer.SendResult{}, fmt.Errorf("stellar: envelope has no XDR: %w", transfer.ErrNotSent)
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.SendTransactionResponse, error) {
		return c.SendTransaction(ctx, protocol.SendTransactionRequest{Transaction: env.XDR})
	})
	if err != nil {
		if nothingWritten(err) {
			return transfer.SendResult{}, fmt.Errorf("stellar: sendTransaction %s: %w (%w)", env.InnerHash, transfer.ErrNotSent, err)
		}
		return transfer.SendResult{}, fmt.Errorf("stellar: sendTransaction %s: %w", env.InnerHash, err)
	}
	res := transfer.SendResult{LatestLedger: resp.LatestLedger, LatestLedgerCloseTime: closeTime(resp.LatestLedgerCloseTime)}
	switch resp.Status {
	case stellarcore.TXStatusPending:
		res.Status = transfer.SendPending
	case stellarcore.TXStatusDuplicate:
		res.Status = transfer.SendDuplicate
	case stellarcore.TXStatusTryAgainLater:
		res.Status = transfer.SendTryAgainLater
		res.SourceBusy = l.sourceBusy(env, res.LatestLedgerCloseTime)
	case stellarcore.TXStatusError:
		res.Status = transfer.SendError
		var tr xdr.TransactionResult
		if resp.ErrorResultXDR != "" && xdr.SafeUnmarshalBase64(resp.ErrorResultXDR, &tr) == nil {
			res.Code = TxCode(tr)
		}
		if res.Code == "txINSUFFICIENT_FEE" {
			l.refusedAsTooLow(env, tr)
		}
	default:
		return transfer.SendResult{}, fmt.Errorf("stellar: sendTransaction %s: %w: unknown status %q", env.InnerHash, transfer.ErrUnexpectedAnswer, resp.Status)
	}
	if resp.Hash != "" && !slices.Contains(sentHashes(env), strings.ToLower(resp.Hash)) {
		// The server hashed something else: a wrong passphrase or a broken server. What it did
		// with the envelope is unknown.
		return transfer.SendResult{}, fmt.Errorf("stellar: %w: sendTransaction answered %s for hash %s, not the envelope's %v", transfer.ErrUnexpectedAnswer, resp.Status, resp.Hash, sentHashes(env))
	}
	return res, nil
}

// Lookup asks getTransaction for env.InnerHash, then, while NOT_FOUND, for each of env.Outers()
// (every fee bump sent around it, oldest first). It reports SUCCESS or FAILED with the hash found, its ledger, the fee charged and,
// for FAILED, ResultCodes ("tx_failed", "op_underfunded", ...); or NOT_FOUND. LatestLedger,
// LatestLedgerCloseTime and OldestLedger describe the history searched; across two calls they are
// the conservative pair (the earlier latest, the later oldest).
func (l *RPCLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if env.InnerHash == "" {
		return transfer.Lookup{}, errors.New("stellar: envelope has no hash")
	}
	// The ledger fact first. stellar-rpc's getTransaction reads the transaction and only then the
	// ledger range (internal/methods/get_transaction.go, GetTransaction: GetTransaction on the
	// transaction reader, then GetLedgerRange; from 25.1.0), so the latestLedger of a NOT_FOUND
	// answer can include a ledger the search did not see. A ledger read before the search began is
	// covered by it, on one instance. Its close time comes with it, or from getLedgers before
	// 25.0.0 (rpcLatest, which also says why the earlier read order changes nothing here).
	beforeSeq, beforeClose, err := l.rpcLatest(ctx)
	if err != nil {
		return transfer.Lookup{}, err
	}
	lk, err := l.getTransaction(ctx, env.InnerHash)
	if err != nil || lk.Status != transfer.LookupNotFound {
		return lk, err
	}
	// Every fee bump sent around the inner transaction (a replacement by fee leaves several; any
	// one of them may be the one that landed). stellar-rpc finds a fee bump by its inner hash too,
	// so these searches only confirm what the first one would have found.
	for _, hash := range env.Outers() {
		outer, err := l.getTransaction(ctx, hash)
		if err != nil {
			return transfer.Lookup{}, err
		}
		if outer.Status != transfer.LookupNotFound {
			return outer, nil
		}
		lk.OldestLedger = max(lk.OldestLedger, outer.OldestLedger)
		lk.LatestLedger = min(lk.LatestLedger, outer.LatestLedger)
	}
	return l.notFound(ctx, env, lk, beforeSeq, beforeClose), nil
}

// notFound is the Lookup of an envelope neither of whose hashes was found, stated so that
// transfer.ProvenDead judges only facts the search covered: LatestLedger and its close time are the
// ledger read before the search (before), never the NOT_FOUND answers' own. When the answers' range
// does not reach before (another instance behind the same URL, lagging), or the deployment is load
// balanced (RPCConfig.LoadBalanced), the history is not claimed to cover anything (OldestLedger 0).
// Once a ledger closed after maxTime is known, the envelope's source account's sequence number
// corroborates on its own: read in one snapshot at or after that ledger, below the envelope's
// sequence number, it proves the envelope had not applied then and never can
// (Lookup.SourceNotAdvanced).
func (l *RPCLedger) notFound(ctx context.Context, env transfer.Envelope, lk transfer.Lookup, before uint32, beforeClose time.Time) transfer.Lookup {
	searched := lk.LatestLedger
	lk.LatestLedger, lk.LatestLedgerCloseTime = before, beforeClose
	if searched < before || l.cfg.LoadBalanced {
		lk.OldestLedger = 0
	}
	if env.MaxTime <= 0 || lk.LatestLedgerCloseTime.IsZero() || lk.LatestLedgerCloseTime.Unix() <= env.MaxTime {
		return lk
	}
	source, seq, err := innerSourceAndSequence(env.XDR)
	if err != nil {
		return lk
	}
	current, at, err := l.sequenceAt(ctx, source)
	if err == nil && at >= before && current < seq {
		lk.SourceNotAdvanced = true
	}
	return lk
}

// innerSourceAndSequence decodes a signed envelope (plain or fee bump) and returns the inner
// transaction's source account (G...) and sequence number.
func innerSourceAndSequence(envXDR string) (string, int64, error) {
	if envXDR == "" {
		return "", 0, errors.New("stellar: no envelope XDR")
	}
	gen, err := txnbuild.TransactionFromXDR(envXDR)
	if err != nil {
		return "", 0, fmt.Errorf("stellar: decoding envelope: %w", err)
	}
	tx, ok := gen.Transaction()
	if !ok {
		fb, ok := gen.FeeBump()
		if !ok {
			return "", 0, errors.New("stellar: envelope is neither a transaction nor a fee bump")
		}
		tx = fb.InnerTransaction()
	}
	src := tx.SourceAccount()
	return src.AccountID, src.Sequence, nil
}

func (l *RPCLedger) getTransaction(ctx context.Context, hash string) (transfer.Lookup, error) {
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetTransactionResponse, error) {
		return c.GetTransaction(ctx, protocol.GetTransactionRequest{Hash: hash})
	})
	if err != nil {
		return transfer.Lookup{}, fmt.Errorf("stellar: getTransaction %s: %w", hash, err)
	}
	lk := transfer.Lookup{
		LatestLedger:          resp.LatestLedger,
		LatestLedgerCloseTime: closeTime(resp.LatestLedgerCloseTime),
		OldestLedger:          resp.OldestLedger,
	}
	switch resp.Status {
	case protocol.TransactionStatusNotFound:
		lk.Status = transfer.LookupNotFound
		return lk, nil
	case protocol.TransactionStatusSuccess:
		lk.Status = transfer.LookupSuccess
	case protocol.TransactionStatusFailed:
		lk.Status = transfer.LookupFailed
	default:
		return transfer.Lookup{}, fmt.Errorf("stellar: getTransaction %s: unknown status %q", hash, resp.Status)
	}
	lk.Hash, lk.Ledger = hash, resp.Ledger
	if lk.Status == transfer.LookupFailed {
		// Read as far as the failure can be judged, even with a code this build does not know.
		fee, codes, err := failedCodesOf(resp.ResultXDR)
		if err != nil {
			return transfer.Lookup{}, fmt.Errorf("stellar: getTransaction %s: decoding resultXdr: %w", hash, err)
		}
		lk.FeeChargedStroops, lk.ResultCodes = fee, codes
		return lk, nil
	}
	var tr xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resp.ResultXDR, &tr); err != nil {
		return transfer.Lookup{}, fmt.Errorf("stellar: getTransaction %s: decoding resultXdr: %w", hash, err)
	}
	lk.FeeChargedStroops = int64(tr.FeeCharged)
	return lk, nil
}

// Done releases the envelope's channel lease (and its quarantine) once its fate is decided. It
// never fails: a lease it cannot release ends at its deadline, and its quarantine once a ledger
// closes after the envelope's maxTime. Without channels it does nothing.
func (l *RPCLedger) Done(ctx context.Context, env transfer.Envelope) {
	l.guard.forget(env)
	l.source.Release(ctx, sources.Lease{}, env)
}

// LatestLedger reads getLatestLedger: the latest ledger the RPC ingested and its close time
// (transfer.LatestReader; the await loop probes with it between Lookups). Before stellar-rpc
// 25.0.0 the close time is read with getLedgers (rpcLatest).
func (l *RPCLedger) LatestLedger(ctx context.Context) (transfer.LedgerInfo, error) {
	seq, at, err := l.rpcLatest(ctx)
	if err != nil {
		return transfer.LedgerInfo{}, err
	}
	return transfer.LedgerInfo{Sequence: seq, CloseTime: at}, nil
}

var _ transfer.LatestReader = (*RPCLedger)(nil)
