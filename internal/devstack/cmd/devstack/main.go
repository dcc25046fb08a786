// Command devstack is the local stack behind `make run`: the API on 127.0.0.1:3000, an embedded
// DynamoDB-compatible server (minidyn) on 127.0.0.1:8000 and a local Stellar network on
// 127.0.0.1:8010, with a funded vault, a USDC asset and demo wallets. It is never deployed.
//
// Environment: API_ADDR, DYNAMODB_ADDR, STELLAR_ADDR, LAMBDA_ADDR (the Lambda Invoke API,
// 127.0.0.1:3001), KMS_ADDR (the KMS emulator, 127.0.0.1:8020) override the listen addresses;
// SIGNER=kms signs the vault's and the fee account's transactions with Ed25519 keys in a local
// KMS emulator (kms.go) through the AWS SDK's KMS client, the KMS key added as the vault's
// signer; TRACING=otel traces with OpenTelemetry into a local OTLP receiver on TRACES_ADDR
// (127.0.0.1:4318; tracing.go); SWEEP_INTERVAL_MS the sweep's period (1 minute); DYNAMODB_ENDPOINT uses an existing DynamoDB endpoint instead of the embedded one;
// LEDGER_INTERVAL_MS sets the ledger close interval; LEDGER_CLOCK varies the gaps around it
// ("fixed", the default; "uniform" for +-20%, "uniform:0.1" for another spread; "pubnet" for
// pubnet's recorded close times), seeded by LEDGER_CLOCK_SEED (1); every setting the API function reads per call
// (TRANSFER_ORCHESTRATION_TIMEOUT_MS, ...) applies too.
package main

import (
	"context"
	"fmt"
	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	logger := logging.New(os.Stderr, slog.LevelInfo)
	if err := run(logger); err != nil {
		logger.Error("devstack failed", "err", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	at, err := listenAddrs(os.Getenv)
	if err != nil {
		return err
	}
	opts := devstack.Options{
		APIAddr: at.api, DynamoAddr: at.dynamo, StellarAddr: at.stellar, KMSAddr: at.kms, TracesAddr: at.traces,
		Getenv: os.Getenv, Logger: logger,
		// The metrics as a terminal shows them (metrics.Console), the events as JSON lines.
		Ops: devstack.OpsOptions{LambdaAddr: at.lambda, Metrics: metrics.Console(os.Stdout), Events: os.Stdout},
	}
	if u := os.Getenv("WEBHOOK_URL"); u != "" {
		// Without WEBHOOK_SECRET the stack generates one, which only the banner shows.
		opts.Ops.Webhook = &devstack.WebhookOptions{URL: u, Secret: os.Getenv("WEBHOOK_SECRET")}
	}
	if ms, err := strconv.Atoi(os.Getenv("SWEEP_INTERVAL_MS")); err == nil && ms > 0 {
		opts.Ops.SweepInterval = time.Duration(ms) * time.Millisecond
	}
	if ms, err := strconv.Atoi(os.Getenv("LEDGER_INTERVAL_MS")); err == nil && ms > 0 {
		opts.LedgerInterval = time.Duration(ms) * time.Millisecond
	}
	seed := uint64(1)
	if v := os.Getenv("LEDGER_CLOCK_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("LEDGER_CLOCK_SEED=%q: want a whole number", v)
		}
		seed = n
	}
	clock, err := stellarsim.ParseLedgerClock(os.Getenv("LEDGER_CLOCK"), seed)
	if err != nil {
		return fmt.Errorf("LEDGER_CLOCK: %w", err)
	}
	opts.LedgerClock = clock
	s, err := devstack.Start(ctx, opts)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: what was asked for
		}
		return err
	}
	printBanner(os.Stdout, s.Info)
	<-ctx.Done()
	fmt.Fprintln(os.Stderr, "stopping…")
	// Stopping is what was asked for: a request cut short on the way out is reported, not a failure.
	if err := s.Close(); err != nil {
		logger.Warn("stopped with requests still in flight", "err", err)
	}
	return nil
}

// printBanner writes what the stack is and how to reach it to w: the addresses, the accounts (public
// keys only), and the line of shell variables README.md's examples use ("Try it").
func printBanner(w io.Writer, i devstack.Info) {
	fmt.Fprintf(w, "\nStellar Transfer Orchestrator, local stack\n\n")
	fmt.Fprintf(w, "  API                %s\n", i.APIURL)
	fmt.Fprintf(w, "  Lambda Invoke API  %s  (ApiFunction, SubmitterFunction, AlertFunction, ReconcileFunction, InDoubtReaderFunction)\n", i.LambdaURL)
	fmt.Fprintf(w, "  Settlement events  %s  (server-sent events, also printed here; curl -N '%s?since=0')\n", i.EventsURL, i.EventsURL)
	if i.WebhookURL != "" {
		fmt.Fprintf(w, "  Webhook            %s  (every settlement event, signed: README.md, \"Signed webhooks\")\n", i.WebhookURL)
		if i.WebhookSecret != "" {
			// Shown once, here, as a receiver under development needs it to verify: a secret of
			// this run that protects nothing. WEBHOOK_SECRET keeps one across runs.
			fmt.Fprintf(w, "    signing secret   %s  (generated for this run; WEBHOOK_SECRET sets one)\n", i.WebhookSecret)
		} else {
			fmt.Fprintf(w, "    signing secret   from WEBHOOK_SECRET\n")
		}
	}
	fmt.Fprintf(w, "  DynamoDB           %s  (table %q)\n", i.DynamoDBEndpoint, i.Table)
	fmt.Fprintf(w, "  Horizon            %s\n", i.HorizonURL)
	fmt.Fprintf(w, "  Stellar RPC        %s\n", i.RPCURL)
	fmt.Fprintf(w, "  Network admin      %s  (GET lists its routes and fault kinds; GET %sstack describes this stack)\n", i.AdminURL, i.AdminURL)
	fmt.Fprintf(w, "  Passphrase         %s\n\n", i.NetworkPassphrase)
	fmt.Fprintf(w, "  Vault              %s\n", i.Vault.Account)
	if i.VaultContract != "" {
		use := "deployed, unused: VAULT_CONTRACT=local sends the transfers through it"
		if i.ContractMode {
			use = "VAULT_CONTRACT=local: deposits and withdrawals call it"
		}
		fmt.Fprintf(w, "  Vault contract     %s  (%s)\n", i.VaultContract, use)
	}
	fmt.Fprintf(w, "  Fee account        %s  (pays the channels' fee bumps; alarm fee-account-xlm-low)\n", i.FeeAccount.Account)
	if i.VaultKMSKey != nil {
		fmt.Fprintf(w, "  Signer             kms: local KMS emulator %s (SIGNER=kms)\n", i.KMSURL)
		fmt.Fprintf(w, "    vault's signer   %s  (key %s; master weight 0)\n", i.VaultKMSKey.Account, i.VaultKMSKey.ARN)
		fmt.Fprintf(w, "    fee account      %s  (key %s)\n", i.FeeKMSKey.Account, i.FeeKMSKey.ARN)
	} else {
		fmt.Fprintf(w, "  Signer             secrets (SIGNER=kms signs through a local KMS emulator instead)\n")
	}
	if i.TracesURL != "" {
		fmt.Fprintf(w, "  Traces (OTLP)      %s  (TRACING=otel; GET lists the spans received)\n", i.TracesURL)
	}
	for _, a := range i.Assets {
		fmt.Fprintf(w, "  Asset              %s issued by %s\n", a.Code, a.Issuer)
	}
	printLimits(w, i.Limits)
	for _, wl := range i.Wallets {
		fmt.Fprintf(w, "  Wallet (USDC trustline)  %s\n", wl.Account)
	}
	fmt.Fprintf(w, "\n  Each start is new: a new network, new keys, accounts and wallets, and an empty table\n  (unless DYNAMODB_ENDPOINT); nothing is kept after Ctrl-C.\n")
	if len(i.Wallets) > 0 {
		// README.md's examples use these variables, so they work whatever ports the stack took.
		fmt.Fprintf(w, "\nIn another shell:\n  export API=%s LAMBDA=%s DYNAMO=%s SIM=%s WALLET=%s\n",
			i.APIURL, i.LambdaURL, i.DynamoDBEndpoint, i.HorizonURL, i.Wallets[0].Account)
		fmt.Fprintf(w, "\nTry:\n  curl -s -X POST %s/transfers \\\n    -H 'Content-Type: application/json' -H 'Idempotency-Key: order-00000001' \\\n    -d '{\"operationType\":\"withdraw\",\"walletAddress\":\"%s\",\"amount\":\"12.5\",\"asset\":\"USDC\"}'\n",
			i.APIURL, i.Wallets[0].Account)
		fmt.Fprintf(w, "  curl -s %s/wallets/%s/transfers/order-00000001\n", i.APIURL, i.Wallets[0].Account)
		fmt.Fprintf(w, "  curl -si -X POST %s/transfers -H 'Prefer: respond-async' \\\n    -H 'Content-Type: application/json' -H 'Idempotency-Key: payout-000001' \\\n    -d '{\"operationType\":\"withdraw\",\"walletAddress\":\"%s\",\"amount\":\"12.5\",\"asset\":\"USDC\"}'   # 202 at once; README.md, \"Asynchronous transfers\"\n",
			i.APIURL, i.Wallets[0].Account)
		fmt.Fprintf(w, "  curl -s '%s/wallets/%s/transfers?limit=20'   # the wallet's history, newest first\n", i.APIURL, i.Wallets[0].Account)
		fmt.Fprintf(w, "  curl -s %sstack\n", i.AdminURL)
		fmt.Fprintf(w, "  export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=local AWS_SECRET_ACCESS_KEY=local   # the aws CLI signs even locally; v1 reads only AWS_DEFAULT_REGION\n")
		fmt.Fprintf(w, "  aws lambda invoke --endpoint-url %s --function-name ReconcileFunction \\\n    --cli-binary-format raw-in-base64-out --payload '{\"action\":\"list\"}' out.json   # AWS CLI v1: without --cli-binary-format\n", i.LambdaURL)
		fmt.Fprintf(w, "  aws dynamodb scan --table-name %s --endpoint-url %s\n\n", i.Table, i.DynamoDBEndpoint)
	}
}

// printLimits writes the banner's line of the limits in force (LIMITS), an asset a line.
func printLimits(w io.Writer, limits map[string]devstack.AssetLimits) {
	if len(limits) == 0 {
		fmt.Fprintf(w, "  Limits             none (LIMITS sets per-asset caps: README.md, \"Configuration\")\n")
		return
	}
	label := "  Limits (LIMITS)    "
	for _, code := range slices.Sorted(maps.Keys(limits)) {
		l := limits[code]
		var caps []string
		for _, c := range []struct{ name, v string }{{"per transfer", l.PerTransfer}, {"wallet daily", l.WalletDaily}, {"asset daily", l.AssetDaily}} {
			if c.v != "" {
				caps = append(caps, c.name+" "+c.v+" "+code)
			}
		}
		fmt.Fprintf(w, "%s%s: %s\n", label, code, strings.Join(caps, ", "))
		label = "                     "
	}
}

// addrs are the stack's listen addresses.
type addrs struct{ api, lambda, dynamo, stellar, kms, traces string }

// defaultPorts are the ports without PORT_BASE, in addrs' order.
var defaultPorts = [6]int{3000, 3001, 8000, 8010, 8020, 4318}

// listenAddrs reads the listen addresses: PORT_BASE=N puts the API on N, the Lambda Invoke API on
// N+1, DynamoDB on N+2, the Stellar network on N+3, the KMS emulator on N+4 and the traces
// receiver on N+5 (all on 127.0.0.1), so one variable moves the whole stack beside another;
// without it they are defaultPorts. API_ADDR, LAMBDA_ADDR, DYNAMODB_ADDR, STELLAR_ADDR, KMS_ADDR
// and TRACES_ADDR each override one. Errors: a PORT_BASE that is not a whole number from 1024 to
// 65530.
func listenAddrs(getenv func(string) string) (addrs, error) {
	ports := defaultPorts
	if v := getenv("PORT_BASE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1024 || n > 65535-5 {
			return addrs{}, fmt.Errorf("PORT_BASE=%q: want a port from 1024 to 65530 (the stack takes it and the 5 above it)", v)
		}
		for i := range ports {
			ports[i] = n + i
		}
	}
	at := func(env string, port int) string {
		if v := getenv(env); v != "" {
			return v
		}
		return "127.0.0.1:" + strconv.Itoa(port)
	}
	return addrs{
		api: at("API_ADDR", ports[0]), lambda: at("LAMBDA_ADDR", ports[1]), dynamo: at("DYNAMODB_ADDR", ports[2]),
		stellar: at("STELLAR_ADDR", ports[3]), kms: at("KMS_ADDR", ports[4]), traces: at("TRACES_ADDR", ports[5]),
	}, nil
}
