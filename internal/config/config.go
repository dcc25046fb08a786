// Package config reads the service's configuration from environment variables. Settings the
// seed says are read per call (TRANSFER_ORCHESTRATION_TIMEOUT_MS, TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH)
// are read by Settings on every call; the rest are read once at init by Load, which fails with a
// clear message on a bad value so that a misconfigured function fails at init, not mid-transfer.
package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Getenv looks up one variable; os.Getenv in production, a map in tests.
type Getenv func(string) string

// Settings returns the orchestrator's per-call settings from the environment. An unset or
// invalid value falls back to its default (README.md, "Configuration"; Load has already refused
// invalid values at init).
func Settings(getenv Getenv) transfer.Settings {
	s := transfer.DefaultSettings()
	s.Timeout = millis(getenv, "TRANSFER_ORCHESTRATION_TIMEOUT_MS", s.Timeout)
	s.DeadlineMargin = millis(getenv, "TRANSFER_DEADLINE_MARGIN_MS", s.DeadlineMargin)
	s.KeyTTL = millis(getenv, "IDEMPOTENCY_KEY_TTL_MS", s.KeyTTL)
	s.ProofWindow = millis(getenv, "TRANSFER_PROOF_WINDOW_MS", s.ProofWindow)
	s.MinValidity = millis(getenv, "TRANSFER_MIN_VALIDITY_MS", s.MinValidity)
	if n, err := positiveInt(getenv("TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH")); err == nil && n >= transfer.MinKeyLength && n <= transfer.MaxKeyLengthBound {
		s.MaxKeyLength = n
	}
	if n := BatchSizeSet(getenv); n > 0 {
		s.BatchSize = BatchWithinLedgerShare(n, channelCount(getenv), opsPerLedger(getenv))
	}
	if n, err := positiveInt(getenv("SUBMITTER_TRANSACTIONS_PER_INVOCATION")); err == nil {
		s.TransactionsPerInvocation = n
	}
	return s
}

// BatchSizeSet is BATCH_SIZE as set, 1 to transfer.MaxBatchOperations (0 when unset or invalid),
// before BATCH_OPS_PER_LEDGER's share lowers it to Settings.BatchSize. Above 1 the submitter's
// event source is batched whatever the share leaves (template.yaml: k x TransfersPerTransaction
// messages an event), so the submitter runs its events as batches (transfer.RunQueuedBatch),
// which bounds what an event pays (Settings.TransactionsPerInvocation) even when the share leaves
// batches of 1.
func BatchSizeSet(getenv Getenv) int {
	if n, err := positiveInt(getenv("BATCH_SIZE")); err == nil && n <= transfer.MaxBatchOperations {
		return n
	}
	return 0
}

// DefaultBatchOpsPerLedger is BATCH_OPS_PER_LEDGER's default: half of pubnet's 1,000 classic
// operations per ledger (the ledger header's maxTxSetSize).
const DefaultBatchOpsPerLedger = 500

// BatchWithinLedgerShare is the batch size the submitter uses: size (BATCH_SIZE), lowered so that
// its batches take at most opsPerLedger operation slots of one ledger (BATCH_OPS_PER_LEDGER),
// never below 1. Each source sends at most one transaction per ledger (stellar-core keeps one
// transaction per source account in its queue; the channel calendar books one slot per channel
// per ledger), so channels sources take channels x (size + 1) slots (a fee bump counts one more:
// FeeBumpTransactionFrame::getNumOperations), or size on the vault alone (channels 0). Past a
// ledger's room the batches compete with each other: the network charges every included
// transaction the lowest included rate (surge pricing), which would then be one of this
// deployment's own bids, paid by every payment of the ledger, and pushes everyone else's
// transactions out.
func BatchWithinLedgerShare(size, channels, opsPerLedger int) int {
	if size <= 1 || opsPerLedger <= 0 {
		return size
	}
	most := opsPerLedger
	if channels > 0 {
		most = opsPerLedger/channels - 1
	}
	return max(1, min(size, most))
}

// BatchShareNote is the warning a batched submitter logs at init when BATCH_OPS_PER_LEDGER makes
// its batches smaller than BATCH_SIZE (BatchWithinLedgerShare), "" otherwise. The event source
// still delivers up to SUBMITTER_TRANSACTIONS_PER_INVOCATION x BATCH_SIZE messages an invocation
// (template.yaml, Mappings: BatchMessages): the messages past the smaller batches come back a
// ledger later, each receive counting toward the queue's maxReceiveCount, so a long backlog can
// dead-letter some (the sweep sends their items again).
func BatchShareNote(getenv Getenv) string {
	n, err := positiveInt(getenv("BATCH_SIZE"))
	if err != nil || n <= 1 || n > transfer.MaxBatchOperations {
		return ""
	}
	channels, ops := channelCount(getenv), opsPerLedger(getenv)
	if got := BatchWithinLedgerShare(n, channels, ops); got < n {
		return fmt.Sprintf("BATCH_SIZE %d is above what BATCH_OPS_PER_LEDGER %d allows at CHANNEL_COUNT %d (%d a transaction): "+
			"each invocation receives more messages than it pays and the rest come back a ledger later, each receive counting toward the dead-letter queue; "+
			"set TransfersPerTransaction to at most %d or raise BatchOpsPerLedger", n, ops, channels, got, got)
	}
	return ""
}

// channelCount is CHANNEL_COUNT, 0 when unset or invalid (Load refuses invalid values).
func channelCount(getenv Getenv) int {
	n, err := strconv.Atoi(strings.TrimSpace(getenv("CHANNEL_COUNT")))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// opsPerLedger is BATCH_OPS_PER_LEDGER, DefaultBatchOpsPerLedger when unset or invalid.
func opsPerLedger(getenv Getenv) int {
	if n, err := positiveInt(getenv("BATCH_OPS_PER_LEDGER")); err == nil {
		return n
	}
	return DefaultBatchOpsPerLedger
}

// OSSettings is Settings over os.Getenv.
func OSSettings() transfer.Settings { return Settings(os.Getenv) }

// Asset is a configured credit asset: code and issuing account.
type Asset struct {
	Code   string `json:"code"`
	Issuer string `json:"issuer"`
}

// Config is what a function reads once at init.
type Config struct {
	// Table is the DynamoDB table (TABLE_NAME). DynamoEndpoint overrides the AWS endpoint
	// (DYNAMODB_ENDPOINT, for the local stack).
	Table          string
	DynamoEndpoint string
	// QueueURL is the SQS queue of async transfers (QUEUE_URL; README.md, "Asynchronous
	// transfers"): the API sends to it, the sweep sends to it again, the submitter changes the
	// visibility of its failed messages (queue.Backoff). Empty: Prefer: respond-async is ignored,
	// the sweep leaves queued items alone and a failed message waits the queue's visibility timeout.
	QueueURL string
	// Backend is "rpc" or "horizon" (STELLAR_BACKEND, default "rpc").
	Backend string
	RPCURL  string // STELLAR_RPC_URL
	// RPCLoadBalanced: STELLAR_RPC_URL is served by several instances that may lag each other
	// (STELLAR_RPC_LOAD_BALANCED=true); see stellar.RPCConfig.LoadBalanced.
	RPCLoadBalanced   bool
	HorizonURL        string // HORIZON_URL
	NetworkPassphrase string // NETWORK_PASSPHRASE
	// VaultAccount is the classic vault (VAULT_ACCOUNT, G...).
	VaultAccount string
	// Assets are the accepted assets (ASSETS, "CODE:ISSUER,CODE:ISSUER"), codes spelled as
	// configured.
	Assets []Asset
	// MaxFeeStroops caps what one transfer may pay (MAX_FEE_STROOPS, default 100000 stroops).
	MaxFeeStroops int64
	// FeePercentile is the percentile of the network's recent inclusion fees offered per
	// operation (FEE_PERCENTILE: 10, 20, ..., 90, 95, 99; default 90), within MaxFeeStroops.
	FeePercentile int
	// ChannelCount is how many channel accounts are leased as transaction sources (CHANNEL_COUNT,
	// default 0: the vault is the source, one transaction per ledger).
	ChannelCount int
	// SigningSecretARN names the Secrets Manager secret holding the signing keys (SIGNING_SECRET_ARN);
	// with Signer "kms" it holds the channel keys only, and is needed only with channels.
	SigningSecretARN string
	// Signer is where the vault's and the fee account's keys live (SIGNER): "secrets" (the
	// default: seeds in the Secrets Manager secret) or "kms" (AWS KMS Ed25519 keys that never
	// leave KMS: VaultKMSKeyID, FeeKMSKeyID; README.md, "Signing keys in KMS").
	Signer string
	// VaultKMSKeyID is the KMS key (ARN, key ID or alias) that signs the vault's operations
	// (VAULT_KMS_KEY_ID; required with SIGNER=kms), a signer of VaultAccount.
	VaultKMSKeyID string
	// FeeKMSKeyID is the fee account's KMS key (FEE_KMS_KEY_ID; with SIGNER=kms and channels).
	FeeKMSKeyID string
	// KMSEndpoint overrides the KMS endpoint (KMS_ENDPOINT, for the local stack's emulator).
	KMSEndpoint string
	// VaultContract is the vault-contract mode (VAULT_CONTRACTS or VAULT_CONTRACT...; see
	// Contract); zero when unset.
	VaultContract Contract
	// Breaker configures the circuit breaker (CIRCUIT_BREAKER_FAILURE_THRESHOLD, default 5;
	// CIRCUIT_BREAKER_RESET_TIMEOUT_MS, default 30000).
	Breaker transfer.BreakerSettings
	// Limits are the per-asset limits (LIMITS: JSON, parseLimits); nil when unset.
	Limits transfer.Limits
}

// AssetCodes returns the configured asset codes.
func (c Config) AssetCodes() []string {
	codes := make([]string, len(c.Assets))
	for i, a := range c.Assets {
		codes[i] = a.Code
	}
	return codes
}

// Load reads and validates the init-time configuration. The error lists every problem found.
func Load(getenv Getenv) (Config, error) {
	var errs []error
	c := Config{
		Table:             getenv("TABLE_NAME"),
		DynamoEndpoint:    getenv("DYNAMODB_ENDPOINT"),
		QueueURL:          strings.TrimSpace(getenv("QUEUE_URL")),
		Backend:           strings.ToLower(or(getenv("STELLAR_BACKEND"), "rpc")),
		RPCURL:            getenv("STELLAR_RPC_URL"),
		RPCLoadBalanced:   strings.EqualFold(strings.TrimSpace(getenv("STELLAR_RPC_LOAD_BALANCED")), "true"),
		HorizonURL:        getenv("HORIZON_URL"),
		NetworkPassphrase: getenv("NETWORK_PASSPHRASE"),
		VaultAccount:      strings.ToUpper(getenv("VAULT_ACCOUNT")),
		SigningSecretARN:  getenv("SIGNING_SECRET_ARN"),
		Signer:            strings.ToLower(strings.TrimSpace(or(getenv("SIGNER"), SignerSecrets))),
		VaultKMSKeyID:     strings.TrimSpace(getenv("VAULT_KMS_KEY_ID")),
		FeeKMSKeyID:       strings.TrimSpace(getenv("FEE_KMS_KEY_ID")),
		KMSEndpoint:       strings.TrimSpace(getenv("KMS_ENDPOINT")),
		MaxFeeStroops:     100_000,
		FeePercentile:     90,
	}
	if c.Table == "" {
		errs = append(errs, errors.New("TABLE_NAME is required"))
	}
	switch c.Backend {
	case "rpc":
		if c.RPCURL == "" {
			errs = append(errs, errors.New("STELLAR_RPC_URL is required when STELLAR_BACKEND=rpc"))
		}
	case "horizon":
		if c.HorizonURL == "" {
			errs = append(errs, errors.New("HORIZON_URL is required when STELLAR_BACKEND=horizon"))
		}
	default:
		errs = append(errs, fmt.Errorf("STELLAR_BACKEND must be rpc or horizon, not %q", c.Backend))
	}
	if c.NetworkPassphrase == "" {
		errs = append(errs, errors.New("NETWORK_PASSPHRASE is required"))
	}
	if c.VaultAccount == "" {
		errs = append(errs, errors.New("VAULT_ACCOUNT is required"))
	}
	assets, err := parseAssets(getenv("ASSETS"))
	if err != nil {
		errs = append(errs, err)
	}
	c.Assets = assets
	if v := getenv("MAX_FEE_STROOPS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 100 {
			errs = append(errs, fmt.Errorf("MAX_FEE_STROOPS must be a whole number of stroops >= 100, not %q", v))
		} else {
			c.MaxFeeStroops = n
		}
	}
	if v := getenv("FEE_PERCENTILE"); v != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(v)), "p"))
		if err != nil || !(n >= 10 && n <= 90 && n%10 == 0 || n == 95 || n == 99) {
			errs = append(errs, fmt.Errorf("FEE_PERCENTILE must be one of 10, 20, ..., 90, 95, 99, not %q", v))
		} else {
			c.FeePercentile = n
		}
	}
	if v := getenv("CHANNEL_COUNT"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 0 || n > 1000 {
			errs = append(errs, fmt.Errorf("CHANNEL_COUNT must be a whole number from 0 to 1000, not %q", v))
		} else {
			c.ChannelCount = n
		}
	}
	errs = append(errs, loadContract(getenv, &c)...)
	if limits, err := parseLimits(getenv("LIMITS"), c.AssetCodes()); err != nil {
		errs = append(errs, err)
	} else {
		c.Limits = limits
	}
	errs = append(errs, checkSigner(c)...)
	c.Breaker.FailureThreshold = 5
	if v := getenv("CIRCUIT_BREAKER_FAILURE_THRESHOLD"); v != "" {
		n, err := positiveInt(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("CIRCUIT_BREAKER_FAILURE_THRESHOLD: %w", err))
		}
		c.Breaker.FailureThreshold = uint32(n)
	}
	c.Breaker.ResetTimeout = 30 * time.Second
	for _, name := range []string{"CIRCUIT_BREAKER_RESET_TIMEOUT_MS", "TRANSFER_ORCHESTRATION_TIMEOUT_MS",
		"TRANSFER_DEADLINE_MARGIN_MS", "IDEMPOTENCY_KEY_TTL_MS", "TRANSFER_PROOF_WINDOW_MS", "TRANSFER_MIN_VALIDITY_MS"} {
		if v := getenv(name); v != "" {
			if _, err := positiveInt(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
			}
		}
	}
	c.Breaker.ResetTimeout = millis(getenv, "CIRCUIT_BREAKER_RESET_TIMEOUT_MS", c.Breaker.ResetTimeout)
	if v := getenv("IDEMPOTENCY_KEY_TTL_MS"); v != "" {
		if err := Settings(getenv).Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if v := getenv("TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH"); v != "" {
		// The upper bound is the longest client key whose store key still fits DynamoDB's index
		// sort keys (gsi1sk, gsi2sk: "<time>#transfer:<16 hex>:<key>", at most 1,024 bytes);
		// transfer.MaxKeyLengthBound derives it. A longer setting would accept keys that no write
		// can store, found only at the first such claim.
		if n, err := positiveInt(v); err != nil || n < transfer.MinKeyLength || n > transfer.MaxKeyLengthBound {
			errs = append(errs, fmt.Errorf("TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH must be a whole number from %d to %d (a longer key's store key would not fit DynamoDB's 1,024-byte index sort keys), not %q",
				transfer.MinKeyLength, transfer.MaxKeyLengthBound, v))
		}
	}
	if v := strings.TrimSpace(getenv("BATCH_SIZE")); v != "" {
		// A transaction holds at most MAX_OPS_PER_TX operations, and a Soroban transaction exactly
		// one (stellar-core, TransactionFrame::validateSorobanOpsConsistency), so a vault contract
		// pays one transfer per transaction (transfer/doc.go, "Batches").
		switch n, err := positiveInt(v); {
		case err != nil || n > transfer.MaxBatchOperations:
			errs = append(errs, fmt.Errorf("BATCH_SIZE must be a whole number from 1 to %d, not %q", transfer.MaxBatchOperations, v))
		case n > 1 && len(c.VaultContract.Contracts) > 0:
			errs = append(errs, fmt.Errorf("BATCH_SIZE %d needs a classic vault: a Soroban transaction holds one operation, so VAULT_CONTRACTS and VAULT_CONTRACT keep BATCH_SIZE 1", n))
		}
	}
	if v := strings.TrimSpace(getenv("SUBMITTER_TRANSACTIONS_PER_INVOCATION")); v != "" {
		if _, err := positiveInt(v); err != nil {
			errs = append(errs, fmt.Errorf("SUBMITTER_TRANSACTIONS_PER_INVOCATION must be a positive whole number (the batches one submitter invocation pays), not %q", v))
		}
	}
	if v := strings.TrimSpace(getenv("BATCH_OPS_PER_LEDGER")); v != "" {
		if _, err := positiveInt(v); err != nil {
			errs = append(errs, fmt.Errorf("BATCH_OPS_PER_LEDGER must be a positive whole number (classic operation slots per ledger), not %q", v))
		}
	}
	if v := strings.TrimSpace(getenv("STELLAR_RPC_LOAD_BALANCED")); v != "" && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
		errs = append(errs, fmt.Errorf("STELLAR_RPC_LOAD_BALANCED must be true or false, not %q", v))
	}
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return c, nil
}

// parseAssets reads "CODE:ISSUER,CODE:ISSUER". Codes are kept as spelled (Stellar asset codes are
// case-sensitive: "yUSDC" and "YUSDC" are two assets) and must be 1 to 12 ASCII letters or digits
// (stellar-core, src/util/types.cpp isAssetValid); two codes that differ only by case are refused,
// since requests name an asset ignoring case. Issuers are upper-cased; the Stellar adapter checks
// them.
func parseAssets(v string) ([]Asset, error) {
	if strings.TrimSpace(v) == "" {
		return nil, errors.New("ASSETS is required (CODE:ISSUER,...)")
	}
	var out []Asset
	seen := map[string]string{}
	for i, part := range strings.Split(v, ",") {
		code, issuer, ok := strings.Cut(strings.TrimSpace(part), ":")
		code = strings.TrimSpace(code)
		if !ok || !assetCodeRE.MatchString(code) || strings.TrimSpace(issuer) == "" {
			// Not echoed: a misplaced secret seed would end up in the log.
			return nil, fmt.Errorf("ASSETS: entry %d is not CODE:ISSUER with a code of 1 to 12 letters or digits", i+1)
		}
		if prev, dup := seen[strings.ToUpper(code)]; dup {
			return nil, fmt.Errorf("ASSETS: %s and %s are the same code but for case; requests name assets ignoring case, so configure one", prev, code)
		}
		seen[strings.ToUpper(code)] = code
		out = append(out, Asset{Code: code, Issuer: strings.ToUpper(strings.TrimSpace(issuer))})
	}
	return out, nil
}

// assetCodeRE is a Stellar asset code: 1 to 12 ASCII letters and digits.
var assetCodeRE = regexp.MustCompile(`^[A-Za-z0-9]{1,12}$`)

func millis(getenv Getenv, name string, def time.Duration) time.Duration {
	n, err := positiveInt(getenv(name))
	if err != nil {
		return def
	}
	return time.Duration(n) * time.Millisecond
}

func positiveInt(v string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive whole number, not %q", v)
	}
	return n, nil
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// The SIGNER values.
const (
	SignerSecrets = "secrets"
	SignerKMS     = "kms"
)

// checkSigner checks SIGNER and the KMS key IDs. With SIGNER=kms the vault's key is required, and
// with channels the fee account's key too (it pays their fee bumps); key IDs are a key ARN, a key
// ID, an alias name (alias/...) or an alias ARN, never containing spaces.
func checkSigner(c Config) []error {
	var errs []error
	switch c.Signer {
	case SignerSecrets:
		return nil
	case SignerKMS:
	default:
		return []error{fmt.Errorf("SIGNER must be secrets or kms, not %q", c.Signer)}
	}
	if c.VaultKMSKeyID == "" {
		errs = append(errs, errors.New("VAULT_KMS_KEY_ID is required when SIGNER=kms"))
	}
	if c.ChannelCount > 0 && c.FeeKMSKeyID == "" {
		errs = append(errs, errors.New("FEE_KMS_KEY_ID is required when SIGNER=kms and CHANNEL_COUNT > 0 (the fee account pays the channels' fee bumps)"))
	}
	for name, v := range map[string]string{"VAULT_KMS_KEY_ID": c.VaultKMSKeyID, "FEE_KMS_KEY_ID": c.FeeKMSKeyID} {
		if strings.ContainsAny(v, " \t\n") || v != "" && len(v) > 2048 {
			errs = append(errs, fmt.Errorf("%s must be a KMS key ARN, key ID or alias", name))
		}
	}
	return errs
}
