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

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/protocols/stellarcore"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// DefaultHTTPTimeout bounds one RPC request when RPCConfig.HTTPClient is nil. It also bounds how
// long a request abandoned by its context keeps running (rpcclient does not cancel it).
const DefaultHTTPTimeout = 30 * time.Second

// CodeSigningKeysUnavailable is the *transfer.UnavailableError code when the signing keys cannot
// be loaded (503, retryable: nothing was built or sent).
const CodeSigningKeysUnavailable = "SIGNING_KEYS_UNAVAILABLE"

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
	// MaxFeeStroops caps what one transaction may be charged, in stroops (MAX_FEE_STROOPS); 0
	// means no cap beyond the base fee.
	MaxFeeStroops int64
	// Keys supplies the signing keys, read on every Prepare. Keys.Vault must be a signer of
	// VaultAccount (usually its master key); if it is not, the network refuses the envelope
	// with txBAD_AUTH.
	Keys KeySource
}

// RPCLedger is a transfer.Ledger over Stellar RPC. It is safe for concurrent use.
type RPCLedger struct {
	cfg    RPCConfig
	assets map[string]txnbuild.CreditAsset
	source source
}

var _ transfer.Ledger = (*RPCLedger)(nil)

// NewRPCLedger checks cfg and returns a ledger. It makes no network call; see CheckNetwork.
func NewRPCLedger(cfg RPCConfig) (*RPCLedger, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		// Not echoed: a URL can carry an API key.
		return nil, errors.New("stellar: the RPC URL is not an http(s) URL")
	}
	if cfg.Passphrase == "" {
		return nil, errors.New("stellar: a network passphrase is required")
	}
	if !strkey.IsValidEd25519PublicKey(cfg.VaultAccount) {
		// Not echoed: a misplaced secret seed would end up in the log.
		return nil, errors.New("stellar: the vault account is not a G... account")
	}
	if cfg.Keys == nil {
		return nil, errors.New("stellar: a key source is required")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
	}
	if cfg.BaseFeeStroops == 0 {
		cfg.BaseFeeStroops = txnbuild.MinBaseFee
	}
	if cfg.BaseFeeStroops < txnbuild.MinBaseFee {
		return nil, fmt.Errorf("stellar: base fee %d is below the network minimum %d stroops", cfg.BaseFeeStroops, txnbuild.MinBaseFee)
	}
	if cfg.MaxFeeStroops != 0 && cfg.MaxFeeStroops < cfg.BaseFeeStroops {
		return nil, fmt.Errorf("stellar: max fee %d stroops is below the base fee %d", cfg.MaxFeeStroops, cfg.BaseFeeStroops)
	}
	assets := map[string]txnbuild.CreditAsset{}
	for _, a := range cfg.Assets {
		code := strings.ToUpper(a.Code)
		if len(code) == 0 || len(code) > 12 {
			return nil, fmt.Errorf("stellar: asset code %q must be 1 to 12 characters", a.Code)
		}
		if !strkey.IsValidEd25519PublicKey(a.Issuer) {
			return nil, fmt.Errorf("stellar: asset %s: the issuer is not a G... account", code)
		}
		if _, dup := assets[code]; dup {
			return nil, fmt.Errorf("stellar: asset %s is configured twice", code)
		}
		assets[code] = txnbuild.CreditAsset{Code: a.Code, Issuer: a.Issuer}
	}
	if len(assets) == 0 {
		return nil, errors.New("stellar: at least one asset is required")
	}
	return &RPCLedger{cfg: cfg, assets: assets, source: vaultSource{account: cfg.VaultAccount}}, nil
}

// CheckNetwork asks the RPC server for its network passphrase and fails if it is not the
// configured one (a mismatch would make every signature invalid).
func (l *RPCLedger) CheckNetwork(ctx context.Context) error {
	got, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetNetworkResponse, error) {
		return c.GetNetwork(ctx)
	})
	if err != nil {
		return fmt.Errorf("stellar: getNetwork: %w", err)
	}
	if got.Passphrase != l.cfg.Passphrase {
		return fmt.Errorf("stellar: RPC serves network %q, configured %q", got.Passphrase, l.cfg.Passphrase)
	}
	return nil
}

func notSupported(detail string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Status: http.StatusUnprocessableEntity, Field: "operationType", Detail: detail}
}

// Prepare builds and signs the envelope for req: a withdraw is one Payment of req.Stroops of the
// asset from the vault to the wallet (a G... account), with the vault's sequence number as the
// network has it now, timebounds {0, maxTime} and the base fee per operation. SubmittedLedger is
// the latest ledger seen just before it returns. Nothing is sent.
//
// Errors: *transfer.ValidationError (422) for what this ledger cannot do (deposits need the
// Soroban vault contract; withdrawals to C... contracts too); *transfer.UnavailableError when the
// keys cannot be loaded or the source account does not exist; a wrapped error when the RPC could
// not be reached or answered wrongly.
func (l *RPCLedger) Prepare(ctx context.Context, req transfer.Request, maxTime time.Time) (transfer.Envelope, error) {
	switch req.OperationType {
	case transfer.Withdraw:
	case transfer.Deposit:
		return transfer.Envelope{}, notSupported("deposits need a vault contract (Soroban), which this deployment does not have yet; only withdrawals are supported")
	default:
		return transfer.Envelope{}, notSupported(fmt.Sprintf("operation %q is not supported", req.OperationType))
	}
	switch {
	case strkey.IsValidEd25519PublicKey(req.WalletAddress):
	case strkey.IsValidContractAddress(req.WalletAddress):
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Status: http.StatusUnprocessableEntity, Field: "walletAddress",
			Detail: "withdrawals to contract addresses (C...) need a vault contract (Soroban), which this deployment does not have yet; use a G... account"}
	default:
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAddress, Status: http.StatusUnprocessableEntity, Field: "walletAddress",
			Detail: "walletAddress must be a G... account"}
	}
	asset, ok := l.assets[strings.ToUpper(req.Asset)]
	if !ok {
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAsset, Status: http.StatusUnprocessableEntity, Field: "asset",
			Detail: fmt.Sprintf("asset %q is not configured on this ledger", req.Asset)}
	}
	if req.Stroops <= 0 {
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAmount, Status: http.StatusUnprocessableEntity, Field: "amount",
			Detail: "amount must be greater than zero"}
	}
	if maxTime.Unix() <= 0 {
		return transfer.Envelope{}, errors.New("stellar: Prepare needs a maxTime (timebounds must be bounded)")
	}

	keys, err := l.cfg.Keys.Keys(ctx)
	if err != nil {
		// The key source's errors never carry seeds (ParseKeys names fields only).
		return transfer.Envelope{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "the signing keys could not be loaded", Err: err}
	}
	lease, err := l.source.acquire(ctx, keys)
	if err != nil {
		return transfer.Envelope{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "no transaction source is available", Err: err}
	}
	env, err := l.build(ctx, lease, req, asset, maxTime)
	if err != nil {
		l.source.release(ctx, lease.account)
		return transfer.Envelope{}, err
	}
	return env, nil
}

func (l *RPCLedger) build(ctx context.Context, lease sourceLease, req transfer.Request, asset txnbuild.CreditAsset, maxTime time.Time) (transfer.Envelope, error) {
	seq, err := l.sequence(ctx, lease.account)
	if err != nil {
		return transfer.Envelope{}, err
	}
	ops := []txnbuild.Operation{&txnbuild.Payment{
		Destination:   req.WalletAddress,
		Amount:        amount.StringFromInt64(req.Stroops),
		Asset:         asset,
		SourceAccount: lease.opSource,
	}}
	fee := l.cfg.BaseFeeStroops * int64(len(ops))
	if l.cfg.MaxFeeStroops > 0 && fee > l.cfg.MaxFeeStroops {
		return transfer.Envelope{}, fmt.Errorf("stellar: fee %d stroops exceeds MAX_FEE_STROOPS %d", fee, l.cfg.MaxFeeStroops)
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: lease.account, Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           ops,
		BaseFee:              l.cfg.BaseFeeStroops,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime.Unix())},
	})
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: building the transaction: %w", err)
	}
	tx, err = tx.Sign(l.cfg.Passphrase, lease.signers...)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: signing the transaction: %w", err)
	}
	b64, err := tx.Base64()
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: encoding the envelope: %w", err)
	}
	hash, err := tx.HashHex(l.cfg.Passphrase)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the transaction: %w", err)
	}
	latest, err := l.latestLedger(ctx)
	if err != nil {
		return transfer.Envelope{}, err
	}
	return transfer.Envelope{
		XDR:             b64,
		InnerHash:       hash,
		MaxTime:         maxTime.Unix(),
		SubmittedLedger: latest,
		Channel:         lease.account,
		FeeStroops:      tx.MaxFee(),
	}, nil
}

// sequence reads account's current sequence number (getLedgerEntries).
func (l *RPCLedger) sequence(ctx context.Context, account string) (int64, error) {
	id, err := xdr.AddressToAccountId(account)
	if err != nil {
		return 0, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	key, err := id.LedgerKey()
	if err != nil {
		return 0, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	keyB64, err := xdr.MarshalBase64(key)
	if err != nil {
		return 0, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: []string{keyB64}})
	})
	if err != nil {
		return 0, fmt.Errorf("stellar: getLedgerEntries for %s: %w", account, err)
	}
	if len(resp.Entries) == 0 {
		return 0, &transfer.UnavailableError{Code: transfer.CodeNetworkUnavailable,
			Detail: "the vault's transaction source account does not exist on the network",
			Err:    fmt.Errorf("%w: %s", ErrAccountMissing, account)}
	}
	var entry xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &entry); err != nil {
		return 0, fmt.Errorf("stellar: decoding account %s: %w", account, err)
	}
	if entry.Account == nil {
		return 0, fmt.Errorf("stellar: getLedgerEntries for %s returned a %s entry", account, entry.Type)
	}
	return int64(entry.Account.SeqNum), nil
}

func (l *RPCLedger) latestLedger(ctx context.Context) (uint32, error) {
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	})
	if err != nil {
		return 0, fmt.Errorf("stellar: getLatestLedger: %w", err)
	}
	if resp.Sequence == 0 {
		return 0, errors.New("stellar: getLatestLedger returned ledger 0")
	}
	return resp.Sequence, nil
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
	case stellarcore.TXStatusError:
		res.Status = transfer.SendError
		var tr xdr.TransactionResult
		if resp.ErrorResultXDR != "" && xdr.SafeUnmarshalBase64(resp.ErrorResultXDR, &tr) == nil {
			res.Code = TxCode(tr)
		}
	default:
		return transfer.SendResult{}, fmt.Errorf("stellar: sendTransaction %s: unknown status %q", env.InnerHash, resp.Status)
	}
	if resp.Hash != "" && !slices.Contains(env.Hashes(), strings.ToLower(resp.Hash)) {
		// The server hashed something else: a wrong passphrase or a broken server. What it did
		// with the envelope is unknown.
		return transfer.SendResult{}, fmt.Errorf("stellar: sendTransaction answered %s for hash %s, not the envelope's %v", resp.Status, resp.Hash, env.Hashes())
	}
	return res, nil
}

// Lookup asks getTransaction for env.InnerHash, then for env.OuterHash when set and the inner one
// is NOT_FOUND. It reports SUCCESS or FAILED with the hash found, its ledger, the fee charged and,
// for FAILED, ResultCodes ("tx_failed", "op_underfunded", ...); or NOT_FOUND. LatestLedger,
// LatestLedgerCloseTime and OldestLedger describe the history searched; across two calls they are
// the conservative pair (the earlier latest, the later oldest).
func (l *RPCLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if env.InnerHash == "" {
		return transfer.Lookup{}, errors.New("stellar: envelope has no hash")
	}
	lk, err := l.getTransaction(ctx, env.InnerHash)
	if err != nil || lk.Status != transfer.LookupNotFound || env.OuterHash == "" {
		return lk, err
	}
	outer, err := l.getTransaction(ctx, env.OuterHash)
	if err != nil {
		return transfer.Lookup{}, err
	}
	if outer.Status != transfer.LookupNotFound {
		return outer, nil
	}
	lk.OldestLedger = max(lk.OldestLedger, outer.OldestLedger)
	return lk, nil
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
	var tr xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resp.ResultXDR, &tr); err != nil {
		return transfer.Lookup{}, fmt.Errorf("stellar: getTransaction %s: decoding resultXdr: %w", hash, err)
	}
	lk.FeeChargedStroops = int64(tr.FeeCharged)
	if lk.Status == transfer.LookupFailed {
		lk.ResultCodes = ResultCodes(tr)
	}
	return lk, nil
}

// Done releases the envelope's transaction source. With the vault as the only source it does
// nothing; channel accounts (issue 5) are released here.
func (l *RPCLedger) Done(ctx context.Context, env transfer.Envelope) {
	l.source.release(ctx, env.Channel)
}
