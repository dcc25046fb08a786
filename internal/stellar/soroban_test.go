package stellar_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// contractRig is the orchestrator with the real contract ledger, minidyn and the local network
// with a vault contract, all on one virtual clock (a ledger closes every 5 s of it). The network
// is the realistic one (protocol 23 restores, core's TOO_LATE offset, queue ageing) with a
// visibility lag of 1 s to contractLagMax.
type contractRig struct {
	t        *testing.T
	clock    *vclock.Clock
	net      *stellarsim.Network
	host     *stellarsim.VaultHost
	contract string
	vault    string
	wallet   string
	inner    stellar.RPCConfig
	cc       stellar.ContractConfig
	ledger   *stellar.ContractLedger
	orch     *transfer.Orchestrator
}

// contractLagMax is the longest the rig's RPC takes to show a closed ledger.
const contractLagMax = 3 * time.Second

// contractRigOpts changes the rig's network.
type contractRigOpts struct {
	// protocol22Restore runs the network's restore flow of before protocol 23
	// (stellarsim.Options.Protocol22Restore), for the test of the service's explicit restore.
	protocol22Restore bool
	// channels > 0 builds the calls on that many channel accounts, fee-bumped by the fee account.
	channels int
	// lanes are the network's per-ledger lane limits (zero: pubnet's).
	lanes stellarsim.LaneLimits
}

func newContractRig(t *testing.T, cc stellar.ContractConfig) *contractRig {
	return newContractRigWith(t, cc, contractRigOpts{})
}

func newContractRigWith(t *testing.T, cc stellar.ContractConfig, o contractRigOpts) *contractRig {
	t.Helper()
	host := stellarsim.NewVaultHost(stellarsim.VaultOptions{MinPersistentTTL: 1000})
	clock, n := startSimNet(t, simNetOpts{net: stellarsim.Options{Contracts: host,
		VisibilityLagMin: time.Second, VisibilityLagMax: contractLagMax, Protocol22Restore: o.protocol22Restore, Lanes: o.lanes}})
	a := fundedKeys(t, n, fundOpts{fee: true, wallet: true})
	keys, usdc, wallet := a.keys, a.usdc, a.wallet
	contract, err := host.DeployVault(stellarsim.VaultSpec{Operator: keys.Vault.Address()})
	if err != nil {
		t.Fatal(err)
	}
	db, _ := dynamotest.Minidyn(t)
	store := dynamotest.NewStore(t, db)
	r := &contractRig{t: t, clock: clock, net: n, host: host, contract: contract, vault: keys.Vault.Address(), wallet: wallet,
		inner: stellar.RPCConfig{
			URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: keys.Vault.Address(),
			Assets: []txnbuild.CreditAsset{{Code: usdc.Code, Issuer: usdc.Issuer}}, Keys: signing.StaticKeys{K: keys},
			MaxFeeStroops: 1_000_000, Clock: clock,
		}}
	if o.channels > 0 {
		pool, err := sources.NewChannelPool(sources.ChannelPoolConfig{Leases: dynamo.NewChannelLeases(db, store.Table()),
			Count: o.channels, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		r.inner.Channels = pool
	}
	cc.Contract = contract
	r.cc = cc
	r.ledger = r.ledgerWithCap(r.inner.MaxFeeStroops)
	if o.channels > 0 {
		if _, err := r.ledger.EnsureChannels(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	r.orch = &transfer.Orchestrator{Store: store, Ledger: r.ledger, Clock: clock,
		Logger: slog.New(slog.DiscardHandler), Breaker: transfer.NewBreaker(transfer.BreakerSettings{})}
	return r
}

// ledgerWithCap is another contract ledger on the rig's network and keys, with MAX_FEE_STROOPS
// maxFee.
func (r *contractRig) ledgerWithCap(maxFee int64) *stellar.ContractLedger {
	r.t.Helper()
	cfg := r.inner
	cfg.MaxFeeStroops = maxFee
	inner, err := stellar.NewRPCLedger(cfg)
	if err != nil {
		r.t.Fatal(err)
	}
	l, err := stellar.NewContractLedger(inner, r.cc)
	if err != nil {
		r.t.Fatal(err)
	}
	return l
}

const unit = transfer.StroopsPerUnit

func (r *contractRig) transfer(key string, op transfer.Operation, wallet string, units int64) (transfer.Outcome, error) {
	r.t.Helper()
	req := transfer.Request{OperationType: op, WalletAddress: wallet, Amount: itoa(units), Asset: "USDC", Stroops: units * unit}
	return r.orch.Transfer(context.Background(), transfer.Input{ClientKey: key, Request: req})
}

func itoa(v int64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		if v /= 10; v == 0 {
			return string(b[i:])
		}
	}
}

// vaultBalance reads wallet's balance entry through getLedgerEntries (0 when absent).
func (r *contractRig) vaultBalance(wallet string) int64 {
	r.t.Helper()
	key, err := stellarsim.VaultBalanceKey(r.contract, wallet)
	if err != nil {
		r.t.Fatal(err)
	}
	kb, _ := xdr.MarshalBase64(key)
	c := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer func() { _ = c.Close() }()
	resp, err := c.GetLedgerEntries(context.Background(), protocol.GetLedgerEntriesRequest{Keys: []string{kb}})
	if err != nil {
		r.t.Fatal(err)
	}
	if len(resp.Entries) == 0 {
		return 0
	}
	var data xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &data); err != nil || data.ContractData == nil || data.ContractData.Val.I128 == nil {
		r.t.Fatalf("balance entry: %v %+v", err, data)
	}
	return int64(data.ContractData.Val.I128.Lo)
}

func (r *contractRig) mustTransfer(key string, op transfer.Operation, wallet string, units int64) transfer.Outcome {
	r.t.Helper()
	out, err := r.transfer(key, op, wallet, units)
	if err != nil {
		r.t.Fatalf("%s %d: %v", op, units, err)
	}
	return out
}

func problemOf(t *testing.T, err error) transfer.Problem {
	t.Helper()
	var p transfer.ProblemError
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T) is not a problem", err, err)
	}
	return p.Problem()
}

func TestContractDepositThenWithdraw(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	out := r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 5)
	if out.TransactionHash == "" || out.Replayed {
		t.Fatalf("deposit outcome %+v", out)
	}
	if got := r.vaultBalance(r.wallet); got != 5*unit {
		t.Fatalf("after deposit: %d", got)
	}
	r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 2)
	if got := r.vaultBalance(r.wallet); got != 3*unit {
		t.Fatalf("after withdraw: %d", got)
	}
	// A replay sends nothing.
	sent := len(r.net.Envelopes())
	if out := r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 2); !out.Replayed {
		t.Fatalf("replay %+v", out)
	}
	if len(r.net.Envelopes()) != sent || r.vaultBalance(r.wallet) != 3*unit {
		t.Fatal("the replay sent something")
	}
	// Contract wallets work the same way (any contract but the vault's own).
	cw := strkey.MustEncode(strkey.VersionByteContract, []byte("another contract's 32-byte ID..."))
	r.mustTransfer("deposit-0002", transfer.Deposit, cw, 4)
	if got := r.vaultBalance(cw); got != 4*unit {
		t.Fatalf("contract wallet: %d", got)
	}
	// The applied transaction is an InvokeHostFunction from the vault, charged its resource fee.
	tx, ok := r.net.Transaction(out.TransactionHash)
	if !ok || tx.Ops[0].Type != "invoke_host_function" || tx.FeeCharged <= 100 {
		t.Fatalf("applied %+v", tx)
	}
}

// A withdrawal above the balance is refused by the simulation with the vault contract's error #1
// (insufficient balance): VAULT_UNDERFUNDED, retryable, nothing sent, the answer a classic vault
// gives when its payment fails op_underfunded (transfer.SourceShortfall): one answer in both modes.
func TestContractWithdrawAboveBalanceIsVaultUnderfunded(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 3)
	sent := len(r.net.Envelopes())
	_, err := r.transfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	p := problemOf(t, err)
	if p.Code != transfer.CodeVaultUnderfunded || p.Classification != transfer.Retryable || p.Kind != transfer.KindUnavailable ||
		!strings.Contains(p.Detail, "contract error #1") || p.RetryAfter <= 0 {
		t.Fatalf("problem %+v", p)
	}
	if len(r.net.Envelopes()) != sent || r.vaultBalance(r.wallet) != 3*unit {
		t.Fatal("something was sent or the balance moved")
	}
	// Retryable: the same key goes through once the balance allows it.
	r.mustTransfer("deposit-0002", transfer.Deposit, r.wallet, 1)
	r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if got := r.vaultBalance(r.wallet); got != 0 {
		t.Fatalf("balance %d", got)
	}
}

// RPC_ERROR: the first send is refused (sendTransaction ERROR txBAD_SEQ): the envelope is proven
// dead; retryable. The budget (13 s, under the minimum validity plus the proof window) leaves no
// room to rebuild within the call, so the refusal is what the caller sees. The retry's envelope
// gets maxTime now + 12 s (MinValidity), outside core's upper-bound offset, so the realistic
// network accepts it.
func TestContractFirstSendRefusedIsRPCError(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{})
	r.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.Timeout = 13 * time.Second
		return s
	}
	if err := r.net.AddFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Code: "txBAD_SEQ"}); err != nil {
		t.Fatal(err)
	}
	_, err := r.transfer("deposit-0001", transfer.Deposit, r.wallet, 2)
	if p := problemOf(t, err); p.Code != transfer.CodeRPCError || p.Classification != transfer.Retryable {
		t.Fatalf("problem %+v", p)
	}
	if len(r.net.Applied()) != 0 {
		t.Fatal("something landed")
	}
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 2)
	if got := r.vaultBalance(r.wallet); got != 2*unit {
		t.Fatalf("balance %d", got)
	}
}

// inDoubt runs one transfer while no ledger closes and returns its in-doubt error.
func (r *contractRig) inDoubt(key string, faults ...stellarsim.Fault) *transfer.InDoubtError {
	r.t.Helper()
	for _, f := range append(faults, stellarsim.Fault{Kind: stellarsim.FaultStall}) {
		if err := r.net.AddFault(f); err != nil {
			r.t.Fatal(err)
		}
	}
	_, err := r.transfer(key, transfer.Deposit, r.wallet, 2)
	var d *transfer.InDoubtError
	if !errors.As(err, &d) {
		r.t.Fatalf("want in doubt, got %v", err)
	}
	if p := problemOf(r.t, err); p.Classification != transfer.Indeterminate || p.Kind != transfer.KindConflict {
		r.t.Fatalf("problem %+v", p)
	}
	// Nothing is re-sent while in doubt; once ledgers close again, the retry settles it from the chain.
	r.net.ClearFaults()
	r.clock.Advance(10 * time.Second) // a ledger closes and includes the queued envelope ...
	r.clock.Advance(contractLagMax)   // ... and RPC shows it
	out, err := r.transfer(key, transfer.Deposit, r.wallet, 2)
	if err != nil || out.TransactionHash == "" {
		r.t.Fatalf("after the stall: %+v %v", out, err)
	}
	if got := r.vaultBalance(r.wallet); got != 2*unit {
		r.t.Fatalf("balance %d: landed more or less than once", got)
	}
	return d
}

// TRANSFER_TIMEOUT: sent and pending, the budget ends before any ledger closes.
func TestContractPendingPastBudgetIsTransferTimeout(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	if d := r.inDoubt("deposit-0001"); d.FailingCode != transfer.CodeTimeout {
		t.Fatalf("failing code %s", d.FailingCode)
	}
}

// INTERNAL_ERROR: the connection dropped after sendTransaction was written, a socket error
// mid-submit (the envelope was handed over; here it was in fact accepted).
func TestContractSendAnswerLostIsInternalError(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	if d := r.inDoubt("deposit-0001", stellarsim.Fault{Kind: stellarsim.FaultDropResponse}); d.FailingCode != transfer.CodeInternalError {
		t.Fatalf("failing code %s", d.FailingCode)
	}
}

// SUBMISSION_FAILED: sendTransaction answered with an unexpected status (HTTP 500 without a
// JSON-RPC body): the envelope was handed over and what became of it is unknown.
func TestContractUnexpectedAnswerIsSubmissionFailed(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	if d := r.inDoubt("deposit-0001", stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: 500}); d.FailingCode != transfer.CodeSubmissionFailed {
		t.Fatalf("failing code %s", d.FailingCode)
	}
}

// SOROBAN_CIRCUIT_OPEN: the RPC is unreachable; after the breaker's threshold of failed calls it
// fails fast without calling the RPC.
func TestContractRPCDownOpensCircuit(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	_ = r.net.Close()
	for i := range 5 {
		_, err := r.transfer("deposit-000"+itoa(int64(i)), transfer.Deposit, r.wallet, 1)
		if p := problemOf(t, err); p.Code != transfer.CodeRPCError || p.Classification != transfer.Retryable {
			t.Fatalf("call %d: %+v", i, p)
		}
	}
	_, err := r.transfer("deposit-0009", transfer.Deposit, r.wallet, 1)
	if p := problemOf(t, err); p.Code != transfer.CodeCircuitOpen || p.Classification != transfer.Retryable || p.Kind != transfer.KindUnavailable || p.RetryAfter <= 0 {
		t.Fatalf("problem %+v", p)
	}
}

func TestContractValidation(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{Decimals: 2})
	_, err := r.ledger.Prepare(context.Background(), transfer.Request{OperationType: transfer.Deposit, WalletAddress: r.wallet,
		Amount: "0.001", Asset: "USDC", Stroops: 10_000}, transfer.Terms{MaxTime: r.clock.Now().Add(time.Minute)})

	if p := problemOf(t, err); p.Code != transfer.CodeInvalidAmount {
		t.Fatalf("too many decimals: %+v", p)
	}
	_, err = r.ledger.Prepare(context.Background(), transfer.Request{OperationType: transfer.Deposit, WalletAddress: "GABC",
		Amount: "1", Asset: "USDC", Stroops: unit}, transfer.Terms{MaxTime: r.clock.Now().Add(time.Minute)})

	if p := problemOf(t, err); p.Code != transfer.CodeInvalidAddress {
		t.Fatalf("bad address: %+v", p)
	}
	// Two decimals: 1.25 USDC is 125 in the contract.
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 1)
	if got := r.vaultBalance(r.wallet); got != 100 {
		t.Fatalf("balance %d, want 100 (two decimals)", got)
	}
	if code, ok := stellar.ContractErrorCode("HostError: Error(Contract, #12)\n..."); !ok || code != 12 {
		t.Fatalf("ContractErrorCode = %d %v", code, ok)
	}
}
