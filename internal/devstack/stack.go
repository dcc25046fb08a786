package devstack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/truora/minidyn/server"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// Options configure the local stack. Empty addresses mean a free port on 127.0.0.1.
type Options struct {
	APIAddr     string // the HTTP API (default for `make run`: 127.0.0.1:3000)
	DynamoAddr  string // the embedded DynamoDB-compatible server (127.0.0.1:8000)
	StellarAddr string // the local Stellar network (127.0.0.1:8010)
	KMSAddr     string // the local KMS emulator, with SIGNER=kms (127.0.0.1:8020)
	TracesAddr  string // the OTLP traces receiver, with TRACING=otel (127.0.0.1:4318; tracing.go)
	// LedgerInterval is how often the local network closes a ledger (default 5 s).
	LedgerInterval time.Duration
	// LedgerClock varies the gaps between closes around LedgerInterval (stellarsim.LedgerClock:
	// fixed by default, uniform +-20%, or pubnet's recorded distribution; seeded).
	LedgerClock stellarsim.LedgerClock
	// FunctionTimeout emulates the Lambda function's timeout: each API request gets this deadline
	// (default 29 s, inside API Gateway's 30 s integration limit).
	FunctionTimeout time.Duration
	// DemoWallets is how many funded wallets with USDC trustlines to create (default 3).
	DemoWallets int
	// Getenv supplies the settings read per call and the overrides; nil means none.
	Getenv config.Getenv
	Logger *slog.Logger
	// Ops configures the alert and reconcile functions and the Lambda Invoke API (lambda_api.go).
	Ops OpsOptions

	// Clock, when set, is the one clock of the service and the local network (a *vclock.Clock for
	// virtual time): the network closes a ledger whenever it has moved LedgerInterval past the last
	// close (stellarsim.Network.CloseOnAdvance; LedgerClock is then unused), so a transfer's await
	// costs no real time. nil: the wall clock, a ledger every LedgerInterval.
	Clock Clock
	// WrapDynamo, when set, wraps the SDK client of the embedded DynamoDB; every function sends its
	// requests through what it returns (and the local stream reads each item back through it
	// after a write, unless APIOnly). For counting requests or adding latency; nil: the client.
	WrapDynamo func(*dynamodb.Client) dynamo.Client
	// APIOnly starts the API function alone: no local stream, no alert, reconcile, reader or
	// submitter function, no sweep and no Lambda Invoke API (Info.LambdaURL and EventsURL stay
	// empty), and no queue, so the API runs every transfer synchronously. For benchmarks and tests
	// of the API function, whose requests the stream's read-backs would add to.
	APIOnly bool
	// Queue, with APIOnly, carries the API function's async transfers (Prefer: respond-async is
	// answered 202 and only what reads the queue runs them); nil: none, every transfer synchronous.
	// Without APIOnly the stack's own in-memory queue and submitter are used and Queue is ignored.
	Queue transfer.Queue

	// Keys, when set, are the service's signing keys, so that a test holds the seeds (its own
	// channel master seed for accounts that are the same in every run, the vault's key for an
	// operator's transactions); a nil ChannelMaster gets a random SEP-5 master seed, and Keys'
	// listed Channels are unused. nil: keys generated at random, whose seeds this package never
	// hands out. With SIGNER=kms Keys.Vault stays the vault's account (its master key hands over
	// to the KMS key) and Keys.Fee is unused.
	Keys *signing.Keys
	// VaultUSDC is the vault's opening USDC and FeeXLM the fee account's opening XLM, in stroops
	// (defaults: 1,000,000 USDC and 10,000 XLM).
	VaultUSDC, FeeXLM int64
	// Network, when set, adjusts the local network's options before it starts (stellarsim.Options:
	// ExpectedCloseInterval, lanes and surge pricing, apply order), after Clock, CloseInterval,
	// LedgerClock and Contracts are set from these Options.
	Network func(*stellarsim.Options)
	// CloseLedgers, with Clock, replaces the default close rule (a ledger whenever the clock has
	// moved LedgerInterval past the last close: stellarsim.Network.CloseOnAdvance). It is called
	// once, with the started network, before any account is made, and arranges the closes itself
	// (on the clock's OnAdvance): for a schedule of its own, or work after every close. Without
	// Clock it is unused: the network closes on its own timer.
	CloseLedgers func(*stellarsim.Network)
	// WrapStellar, when set, wraps the HTTP transport the service's Stellar requests (RPC and
	// Horizon) go through: http.DefaultTransport, or tracing's with TRACING=otel. The client's
	// timeout stays stellar.DefaultHTTPTimeout. For round trips in virtual time and request counts.
	WrapStellar func(http.RoundTripper) http.RoundTripper
	// WrapHandler, when set, wraps the HTTP handler of the embedded DynamoDB (server "dynamodb")
	// and of the local network (server "stellar": Horizon, RPC, friendbot and /_sim/) before they
	// serve, for logging what separate processes send them.
	WrapHandler func(server string, h http.Handler) http.Handler
	// InProcessDynamo has the service's DynamoDB client reach the embedded DynamoDB's handler in
	// the calling goroutine, without a socket, and unsigned (minidyn checks no signature; SigV4's
	// payload hash costs CPU): nothing listens on DynamoAddr, and Info.DynamoDBEndpoint is a name
	// only (inprocess.go). For fault campaigns, whose CPU goes mostly to item reads. Ignored when
	// DYNAMODB_ENDPOINT points elsewhere.
	InProcessDynamo bool
	// DynamoOptions, when set, adjusts the DynamoDB client's options last (RetryMaxAttempts 1, so
	// that every fault reaches the store as it happened).
	DynamoOptions func(*dynamodb.Options)
	// Beside, when set, starts this stack's service on Beside's local network, beside Beside's
	// service, for comparing services on one network: no network of its own (LedgerInterval,
	// LedgerClock, Network and CloseLedgers are unused; Clock must be Beside's), Beside's asset,
	// wallets (DemoWallets is unused) and contract host, and its own vault, fee account, vault
	// contract, channel accounts, DynamoDB and servers. Close leaves the network to Beside.
	Beside *Stack
	// vaultSigner, set by tests, replaces the SetOptions that hands the vault over to its KMS key
	// with SIGNER=kms (vaultSignerOptions(kmsKey)); nil from it sends none.
	vaultSigner func(vault, kmsKey string) *txnbuild.SetOptions
}

// Clock is what Options.Clock must do: the service's clock (Now, Sleep) and a clock the local
// network can close ledgers on (OnAdvance); *vclock.Clock is one.
type Clock interface {
	transfer.Clock
	stellarsim.Advancer
}

// Stack is the running local stack.
type Stack struct {
	Info    Info
	Network *stellarsim.Network
	Service *wiring.Service
	// Config is the API function's configuration and Keys its signing keys, as the service was
	// built from them (for assembling another function over the same stack: wiring.ReconcileParts).
	Config config.Config
	Keys   signing.KeySource
	// Deps are what Service was built from (its Queue included), for assembling another process
	// of the same deployment on the same table and network: wiring.Build(Deps), with the Queue it
	// needs, builds one with a channel pool of its own.
	Deps wiring.Deps
	// KMS is the local KMS emulator (SIGNER=kms), nil otherwise.
	KMS *localKMS
	// Vaults hosts the local network's contracts: the vault contract deployed at start
	// (Info.VaultContract), and any a test deploys.
	Vaults *stellarsim.VaultHost
	// Minidyn is the embedded DynamoDB (for its failure emulation: EmulateFailureForTable on
	// Info.Table); nil when DYNAMODB_ENDPOINT points elsewhere.
	Minidyn *server.Server

	servers []*http.Server
	// listeners are every listener the stack opened: a failed Start closes those no server took
	// yet (a server's Shutdown closes its own).
	listeners []net.Listener
	closers   []func() error
	// shutdown runs first on Close: it ends long-lived responses (the /_events streams), which
	// would otherwise hold the servers' Shutdown.
	shutdown []func()
	ops      *operations
	// closed makes Close run once; closeErr is what it answered.
	closed   sync.Once
	closeErr error
}

// Info is what GET /_sim/stack returns and what `make run` prints.
type Info struct {
	APIURL            string  `json:"apiUrl"`
	DynamoDBEndpoint  string  `json:"dynamodbEndpoint"`
	Table             string  `json:"table"`
	NetworkPassphrase string  `json:"networkPassphrase"`
	HorizonURL        string  `json:"horizonUrl"`
	RPCURL            string  `json:"rpcUrl"`
	FriendbotURL      string  `json:"friendbotUrl"`
	LambdaURL         string  `json:"lambdaUrl"` // the Lambda Invoke API (lambda_api.go)
	AdminURL          string  `json:"adminUrl"`
	Vault             Account `json:"vault"`
	// FeeAccount pays the channels' fee bumps and sponsors their reserves (README.md, "Channel
	// accounts and fees"; the alarm fee-account-xlm-low watches its XLM): its seed's address, or
	// with SIGNER=kms its KMS key's (FeeKMSKey).
	FeeAccount Account `json:"feeAccount"`
	// VaultContract is the vault contract deployed at start (C...); the service calls it when
	// VAULT_CONTRACT=local.
	VaultContract string `json:"vaultContract"`
	// ContractMode is whether the service sends its transfers through VaultContract
	// (VAULT_CONTRACT=local) rather than from the classic vault.
	ContractMode bool           `json:"contractMode"`
	Assets       []config.Asset `json:"assets"`
	Wallets      []Account      `json:"wallets"`
	// Channels are the channel accounts transactions are sent from (CHANNEL_COUNT).
	Channels []string `json:"channels,omitempty"`
	// Signer is SIGNER: "secrets" (seeds in the local secret) or "kms" (keys in the local KMS
	// emulator at KMSURL; kms.go).
	Signer string `json:"signer"`
	KMSURL string `json:"kmsUrl,omitempty"`
	// VaultKMSKey is the KMS key added as the vault's signer (SIGNER=kms); FeeKMSKey the fee
	// account's key.
	VaultKMSKey *KMSKey `json:"vaultKmsKey,omitempty"`
	FeeKMSKey   *KMSKey `json:"feeKmsKey,omitempty"`
	// EventsURL streams the settlement events as server-sent events (events.go).
	EventsURL string `json:"eventsUrl"`
	// WebhookURL receives the settlement events, signed (OpsOptions.Webhook); empty: none.
	WebhookURL string `json:"webhookUrl,omitempty"`
	// WebhookSecret is the "whsec_" secret generated for this stack when WebhookOptions.Secret was
	// empty, for the banner to show beside WebhookURL (a local secret protecting nothing, which a
	// receiver under development needs to verify); empty when the caller gave one. Never in JSON
	// (GET /_sim/stack), and no log line carries it.
	WebhookSecret string `json:"-"`
	// Limits are the per-asset limits in force (LIMITS), by asset code; nil: none.
	Limits map[string]AssetLimits `json:"limits,omitempty"`
	// TracesURL is the OTLP receiver the spans go to with TRACING=otel (tracing.go); GET lists them.
	TracesURL string `json:"tracesUrl,omitempty"`
}

// AssetLimits are one asset's limits (transfer.AssetLimits) in units, as LIMITS spells them
// ("5000", "0.5"); empty: no such limit.
type AssetLimits struct {
	PerTransfer string `json:"perTransfer,omitempty"`
	WalletDaily string `json:"walletDaily,omitempty"`
	AssetDaily  string `json:"assetDaily,omitempty"`
}

// limitsInfo is cfg's limits as Info.Limits shows them; nil for none.
func limitsInfo(l transfer.Limits) map[string]AssetLimits {
	if len(l) == 0 {
		return nil
	}
	inUnits := func(stroops int64) string {
		if stroops <= 0 {
			return ""
		}
		return units(stroops)
	}
	out := make(map[string]AssetLimits, len(l))
	for code, al := range l {
		out[code] = AssetLimits{PerTransfer: inUnits(al.PerTransfer), WalletDaily: inUnits(al.WalletDaily), AssetDaily: inUnits(al.AssetDaily)}
	}
	return out
}

// KMSKey is a KMS key and its public key as a Stellar account ID.
type KMSKey struct {
	ARN     string `json:"arn"`
	Account string `json:"account"`
}

// Account is a public key with what it holds; secret seeds are never shown.
type Account struct {
	Account string `json:"account"`
	// Balances by asset code, in units (7 decimals).
	Balances map[string]string `json:"balances,omitempty"`
}

const table = "transfers"

// Start brings up the embedded DynamoDB, the local Stellar network with a funded vault holding a
// USDC asset from a local issuer, and the API, each on 127.0.0.1.
func Start(ctx context.Context, o Options) (*Stack, error) {
	o.defaults()
	ops := newOperations(o)
	s := &Stack{ops: ops}
	ok := false
	defer func() {
		if !ok {
			_ = s.Close()
		}
	}()

	// TRACING=otel: the traces receiver, and the process's tracing pointed at it, before any client.
	tr, err := s.startTracing(o)
	if err != nil {
		return nil, err
	}
	ops.tracing = tr

	// The embedded DynamoDB (minidyn), unless DYNAMODB_ENDPOINT points elsewhere.
	dynamoURL := o.Getenv("DYNAMODB_ENDPOINT")
	dbOpts := dynamodb.Options{
		Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		APIOptions: tr.awsOptions(),
	}
	if dynamoURL == "" {
		s.Minidyn = server.NewServer()
		h := o.wrapHandler("dynamodb", newTableLister(s.Minidyn))
		if o.InProcessDynamo {
			dynamoURL = inProcessDynamoURL
			dbOpts.HTTPClient = &http.Client{Transport: handlerTransport{h}}
			dbOpts.Credentials = aws.AnonymousCredentials{}
		} else {
			ln, err := s.listen("DynamoDB", "DYNAMODB_ADDR", o.DynamoAddr)
			if err != nil {
				return nil, err
			}
			dynamoURL = "http://" + ln.Addr().String()
			s.serve(ln, h)
		}
	}
	dbOpts.BaseEndpoint = aws.String(dynamoURL)
	db := dynamodb.New(dbOpts, func(d *dynamodb.Options) {
		if o.DynamoOptions != nil {
			o.DynamoOptions(d)
		}
	})
	if err := dynamo.EnsureTable(ctx, db, table); err != nil {
		return nil, fmt.Errorf("devstack: table: %w", err)
	}

	var store dynamo.Client = db
	if o.WrapDynamo != nil {
		store = o.WrapDynamo(db)
	}

	// The local Stellar network and its accounts.
	var clock transfer.Clock = transfer.SystemClock{}
	if o.Clock != nil {
		clock = o.Clock
	}
	if err := s.startNetwork(o); err != nil {
		return nil, err
	}
	net0, vaults := s.Network, s.Vaults
	var keys signing.Keys
	if o.Keys != nil {
		keys = *o.Keys
		keys.Channels = nil
	} else if keys, err = signing.GenerateKeys(0); err != nil {
		return nil, err
	}
	// SIGNER=kms: the vault's and the fee account's keys live in the local KMS emulator.
	var km *kmsSetup
	if o.Getenv("SIGNER") == config.SignerKMS {
		if km, err = s.startKMS(ctx, o.KMSAddr); err != nil {
			return nil, err
		}
		keys.Fee = nil
	}
	if err := addChannelKeys(net0, &keys, km, o.FeeXLM); err != nil {
		return nil, err
	}
	usdc, wallets, err := fundAccounts(net0, keys.Vault, o.VaultUSDC, o.DemoWallets, o.Beside)
	if err != nil {
		return nil, err
	}
	if km != nil {
		// The vault keeps its address; its master key hands over to the KMS key.
		so := vaultSignerOptions(km.vault.Address())
		if o.vaultSigner != nil {
			so = o.vaultSigner(keys.Vault.Address(), km.vault.Address())
		}
		if so != nil {
			applied, err := addVaultSigner(ctx, net0, keys.Vault, so, clock.Now())
			if err == nil {
				err = waitRPCShows(ctx, net0, applied, clock)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	contract, useContract, err := deployVaultContract(vaults, keys.Vault.Address(), o.Getenv)
	if err != nil {
		return nil, err
	}
	stellarLn, err := s.listen("Stellar network", "STELLAR_ADDR", o.StellarAddr)
	if err != nil {
		return nil, err
	}
	stellarURL := "http://" + stellarLn.Addr().String()

	// The signing keys reach the service through the same loader as in AWS: the secret holds the
	// seeds, or with SIGNER=kms the channel keys only.
	secretKeys := keys
	if km != nil {
		secretKeys = signing.Keys{Channels: keys.Channels, ChannelMaster: keys.ChannelMaster}
	}
	doc, err := secretKeys.MarshalSecret()
	if err != nil {
		return nil, err
	}
	const secretID = "local/signing-keys"
	secrets := signing.NewLocalSecrets()
	secrets.Put(secretID, doc)
	assets := []config.Asset{{Code: usdc.Code, Issuer: usdc.Issuer}}
	cfg, err := config.Load(func(k string) string {
		switch k {
		case "SIGNING_SECRET_ARN":
			return secretID
		case "VAULT_KMS_KEY_ID", "FEE_KMS_KEY_ID", "KMS_ENDPOINT":
			if km != nil {
				return map[string]string{"VAULT_KMS_KEY_ID": km.vaultKey, "FEE_KMS_KEY_ID": km.feeKey, "KMS_ENDPOINT": km.url}[k]
			}
		case "TABLE_NAME":
			return table
		case "STELLAR_RPC_URL":
			return stellarURL + "/rpc"
		case "HORIZON_URL": // for STELLAR_BACKEND=horizon
			return stellarURL
		case "NETWORK_PASSPHRASE":
			return net0.Passphrase()
		case "VAULT_ACCOUNT":
			return keys.Vault.Address()
		case "ASSETS":
			return usdc.Code + ":" + usdc.Issuer
		case "CHANNEL_COUNT":
			return channelCount(o.Getenv)
		case "VAULT_CONTRACT":
			return useContract
		}
		return o.Getenv(k)
	})
	if err != nil {
		return nil, err
	}
	var kmsClient signing.KMSAPI
	if km != nil {
		kmsClient = km.client
	}
	keySource, err := wiring.SigningKeys(cfg, secrets, kmsClient)
	if err != nil {
		return nil, err
	}
	// SIGNER=kms: the KMS keys are checked against their accounts before the API serves, as the
	// functions' init does (wiring.Init.TransferService).
	var check *wiring.SignerCheck
	if km != nil {
		check = &wiring.SignerCheck{Source: keySource, Logger: o.Logger}
		keySource = check
	}
	// Async transfers go through an in-process queue to the submitter (submitter.go), and every
	// write through the local stream to the alert function (stream.go).
	deps := wiring.Deps{Config: cfg, Getenv: o.Getenv, Dynamo: store, Keys: keySource, Logger: o.Logger,
		Observer: ops.observer(), HTTPClient: o.stellarClient(tr.httpClient()), Clock: o.Clock, Queue: o.Queue}
	if !o.APIOnly {
		ops.queue = queue.NewMemory()
		deps.Queue, deps.Dynamo = ops.queue, ops.wrap(store)
	}
	svc, err := wiring.Build(deps)
	if err != nil {
		return nil, err
	}
	s.Service, s.Config, s.Keys, s.Deps = svc, cfg, keySource, deps
	if check != nil {
		check.Ledger = svc.Ledger
	}

	apiLn, err := s.listen("API", "API_ADDR", o.APIAddr)
	if err != nil {
		return nil, err
	}
	s.Info = Info{
		APIURL: "http://" + apiLn.Addr().String(), DynamoDBEndpoint: dynamoURL, Table: table,
		NetworkPassphrase: net0.Passphrase(), HorizonURL: stellarURL, RPCURL: stellarURL + "/rpc",
		FriendbotURL: stellarURL + "/friendbot", AdminURL: stellarURL + "/_sim/",
		Vault: Account{Account: keys.Vault.Address()}, Assets: assets, VaultContract: contract, ContractMode: useContract != "",
		Signer: cfg.Signer, TracesURL: tr.tracesURL(), Limits: limitsInfo(cfg.Limits),
	}
	if km != nil {
		s.Info.FeeAccount = Account{Account: km.fee.Address()}
	} else {
		s.Info.FeeAccount = Account{Account: keys.Fee.Address()}
	}
	if km != nil {
		s.Info.KMSURL = km.url
		s.Info.VaultKMSKey = &KMSKey{ARN: km.vaultKey, Account: km.vault.Address()}
		s.Info.FeeKMSKey = &KMSKey{ARN: km.feeKey, Account: km.fee.Address()}
		s.KMS = km.emulator
	}
	for _, w := range wallets {
		s.Info.Wallets = append(s.Info.Wallets, Account{Account: w})
	}
	s.serve(stellarLn, o.wrapHandler("stellar", s.stellarHandler()))
	if check != nil {
		// The local network runs in this process, so a read that fails is a failure here too
		// (the functions start with the check pending instead; wiring.SignerCheck).
		if err := check.Start(ctx); err != nil {
			return nil, fmt.Errorf("devstack: SIGNER=kms: %w", err)
		}
	}
	if s.Info.Channels, err = createChannels(ctx, svc); err != nil {
		return nil, err
	}
	s.serve(apiLn, tr.handler(withDeadline(svc.Handler, o.FunctionTimeout)))
	// The reconcile function is assembled as in AWS (wiring.Reconcile), with the keys: the
	// channels action and the watch's accounts.
	ops.cfg, ops.keys, ops.db = cfg, keySource, store
	if !o.APIOnly {
		if err := ops.start(s, svc); err != nil {
			return nil, err
		}
	}
	ok = true
	return s, nil
}

func (o *Options) defaults() {
	if o.LedgerInterval <= 0 {
		o.LedgerInterval = 5 * time.Second
	}
	if o.FunctionTimeout <= 0 {
		o.FunctionTimeout = 29 * time.Second
	}
	if o.DemoWallets <= 0 {
		o.DemoWallets = 3
	}
	if o.VaultUSDC <= 0 {
		o.VaultUSDC = 1_000_000 * 10_000_000
	}
	if o.FeeXLM <= 0 {
		o.FeeXLM = 10_000 * 10_000_000
	}
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for _, a := range []*string{&o.APIAddr, &o.DynamoAddr, &o.StellarAddr, &o.KMSAddr, &o.TracesAddr} {
		if *a == "" {
			*a = "127.0.0.1:0"
		}
	}
}

// startNetwork starts the local network with a contract host (Stack.Network and Vaults) and
// arranges its ledger closes, or with Beside takes Beside's.
func (s *Stack) startNetwork(o Options) error {
	if o.Beside != nil {
		s.Network, s.Vaults = o.Beside.Network, o.Beside.Vaults
		return nil
	}
	s.Vaults = stellarsim.NewVaultHost(stellarsim.VaultOptions{})
	simOpts := stellarsim.Options{CloseInterval: o.LedgerInterval, LedgerClock: o.LedgerClock, Contracts: s.Vaults}
	if o.Clock != nil {
		simOpts = stellarsim.Options{Clock: o.Clock, Contracts: s.Vaults}
	}
	if o.Network != nil {
		o.Network(&simOpts)
	}
	n, err := stellarsim.Start(simOpts)
	if err != nil {
		return fmt.Errorf("devstack: local network: %w", err)
	}
	s.Network = n
	s.closers = append(s.closers, n.Close)
	switch {
	case o.Clock != nil && o.CloseLedgers != nil:
		o.CloseLedgers(n)
	case o.Clock != nil:
		n.CloseOnAdvance(o.Clock, o.LedgerInterval)
	}
	return nil
}

// wrapHandler is h through WrapHandler for server, or h.
func (o *Options) wrapHandler(server string, h http.Handler) http.Handler {
	if o.WrapHandler == nil {
		return h
	}
	return o.WrapHandler(server, h)
}

// stellarClient is the service's HTTP client for Stellar requests: base (nil: the service's
// default) with its transport wrapped by WrapStellar.
func (o *Options) stellarClient(base *http.Client) *http.Client {
	if o.WrapStellar == nil {
		return base
	}
	if base == nil {
		base = &http.Client{Timeout: stellar.DefaultHTTPTimeout}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &http.Client{Transport: o.WrapStellar(rt), Timeout: base.Timeout}
}

// fundAccounts creates, at genesis, the USDC issuer, the vault (10,000 XLM, a USDC trustline and
// vaultUSDC stroops of USDC) and n wallets with 10,000 XLM and a USDC trustline, and returns the
// asset and the wallets' addresses. Beside a stack (beside set) it creates the vault only, and
// returns beside's asset and wallets.
func fundAccounts(n *stellarsim.Network, vault *keypair.Full, vaultUSDC int64, wallets int, beside *Stack) (stellarsim.Asset, []string, error) {
	const xlm = 10_000 * 10_000_000
	var usdc stellarsim.Asset
	var out []string
	if beside != nil {
		a := beside.Info.Assets[0]
		usdc = stellarsim.Asset{Code: a.Code, Issuer: a.Issuer}
		for _, w := range beside.Info.Wallets {
			out = append(out, w.Account)
		}
	} else {
		issuer, err := n.CreateKeypair(xlm)
		if err != nil {
			return stellarsim.Asset{}, nil, err
		}
		usdc = n.IssueAsset("USDC", issuer)
	}
	if err := n.CreateAccount(vault.Address(), xlm); err != nil {
		return stellarsim.Asset{}, nil, err
	}
	if err := n.AddTrustline(vault.Address(), usdc, 0); err != nil {
		return stellarsim.Asset{}, nil, err
	}
	if err := n.Mint(vault.Address(), usdc, vaultUSDC); err != nil {
		return stellarsim.Asset{}, nil, err
	}
	if beside != nil {
		return usdc, out, nil
	}
	for range wallets {
		w, err := n.CreateKeypair(xlm)
		if err != nil {
			return stellarsim.Asset{}, nil, err
		}
		if err := n.AddTrustline(w.Address(), usdc, 0); err != nil {
			return stellarsim.Asset{}, nil, err
		}
		out = append(out, w.Address())
	}
	return usdc, out, nil
}

// stellarHandler serves the local network (Horizon at /, RPC at /rpc, friendbot, /_sim/ admin)
// and GET /_sim/stack, which describes this stack with current balances; GET /_sim/ (the
// banner's "Network admin") lists both.
func (s *Stack) stellarHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", s.Network.Handler())
	mux.Handle("GET /_sim/{$}", s.Network.AdminIndex(stellarsim.AdminRoute{
		Method: "GET", Path: "/_sim/stack", What: "this stack: its addresses, accounts (public keys only) and their balances"}))
	mux.HandleFunc("GET /_sim/stack", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.InfoWithBalances())
	})
	return mux
}

// InfoWithBalances is Info with the accounts' current balances.
func (s *Stack) InfoWithBalances() Info {
	info := s.Info
	balances := func(acct string) map[string]string {
		m := map[string]string{}
		for _, a := range info.Assets {
			if b, err := s.Network.Balance(acct, stellarsim.Asset{Code: a.Code, Issuer: a.Issuer}); err == nil {
				m[a.Code] = units(b)
			}
		}
		if b, err := s.Network.Balance(acct, stellarsim.Native); err == nil {
			m["XLM"] = units(b)
		}
		return m
	}
	info.Vault.Balances = balances(info.Vault.Account)
	info.FeeAccount.Balances = balances(info.FeeAccount.Account)
	info.Wallets = append([]Account(nil), info.Wallets...)
	for i := range info.Wallets {
		info.Wallets[i].Balances = balances(info.Wallets[i].Account)
	}
	return info
}

func units(stroops int64) string {
	s := fmt.Sprintf("%d.%07d", stroops/10_000_000, stroops%10_000_000)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// withDeadline gives every request the deadline a Lambda invocation would have.
func withDeadline(h http.Handler, d time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// listen listens on addr for what, the server that `make run` places with the environment variable
// env (main.go): a port already taken is reported with the variable that moves it. Close closes
// the listener, served or not.
func (s *Stack) listen(what, env, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devstack: %s listener on %s: %w (is another stack running? PORT_BASE=<port> make run moves the whole stack, %s=127.0.0.1:<port> this listener)", what, addr, err, env)
	}
	s.listeners = append(s.listeners, ln)
	return ln, nil
}

func (s *Stack) serve(ln net.Listener, h http.Handler) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	s.servers = append(s.servers, srv)
	go func() { _ = srv.Serve(ln) }()
}

// Close stops the servers (letting requests in progress finish for up to 10 s), the functions'
// loops and the network, and frees every port the stack took. It runs once: a second call (a
// test's cleanup after the test closed the stack itself) does nothing and answers as the first.
func (s *Stack) Close() error {
	s.closed.Do(func() { s.closeErr = s.close() })
	return s.closeErr
}

func (s *Stack) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	for _, f := range s.shutdown {
		f()
	}
	for i := len(s.servers) - 1; i >= 0; i-- {
		if err := s.servers[i].Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	// The listeners no server took (Start failed between listening and serving); a served one
	// is closed already, and closing it again only answers net.ErrClosed.
	for _, ln := range s.listeners {
		_ = ln.Close()
	}
	for _, c := range s.closers {
		if err := c(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
