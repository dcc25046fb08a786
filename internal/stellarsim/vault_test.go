package stellarsim_test

import (
	"crypto/sha256"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

type vaultEnv struct {
	*env
	host     *stellarsim.VaultHost
	operator *keypair.Full
	vault    string
}

func newVaultEnv(t *testing.T, opts stellarsim.VaultOptions) *vaultEnv {
	t.Helper()
	return newVaultEnvOpts(t, opts, stellarsim.Options{})
}

func newVaultEnvOpts(t *testing.T, opts stellarsim.VaultOptions, nopts stellarsim.Options) *vaultEnv {
	t.Helper()
	host := stellarsim.NewVaultHost(opts)
	nopts.Contracts = host
	e := newEnv(t, nopts)
	op := e.funded(100 * xlm)
	id, err := host.DeployVault(stellarsim.VaultSpec{Operator: op.Address()})
	if err != nil {
		t.Fatalf("DeployVault: %v", err)
	}
	if !strings.HasPrefix(id, "C") {
		t.Fatalf("contract id %q", id)
	}
	return &vaultEnv{env: e, host: host, operator: op, vault: id}
}

func scAddr(t *testing.T, a string) xdr.ScAddress {
	t.Helper()
	s, err := stellarsim.ScAddress(a)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// invokeOp is an unsimulated call of fn(wallet, amount) on the vault.
func (v *vaultEnv) invokeOp(fn, wallet string, amount int64) *txnbuild.InvokeHostFunction {
	hi := xdr.Int64(0)
	args := xdr.ScVec{{Type: xdr.ScValTypeScvAddress, Address: ptr(scAddr(v.t, wallet))},
		{Type: xdr.ScValTypeScvI128, I128: &xdr.Int128Parts{Hi: hi, Lo: xdr.Uint64(amount)}}}
	return &txnbuild.InvokeHostFunction{
		HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract, InvokeContract: &xdr.InvokeContractArgs{
			ContractAddress: scAddr(v.t, v.vault), FunctionName: xdr.ScSymbol(fn), Args: args}},
		SourceAccount: v.operator.Address(),
	}
}

func ptr[T any](v T) *T { return &v }

// simulate builds an unsigned transaction around op and simulates it.
func (v *vaultEnv) simulate(src *keypair.Full, op txnbuild.Operation) protocol.SimulateTransactionResponse {
	v.t.Helper()
	tx := v.build(src, []txnbuild.Operation{op}, 100, 0)
	r, err := v.rpc.SimulateTransaction(v.ctx, protocol.SimulateTransactionRequest{Transaction: b64(v.t, tx)})
	if err != nil {
		v.t.Fatalf("simulateTransaction: %v", err)
	}
	return r
}

// assemble applies a simulation to op (data, auth) and signs it.
func (v *vaultEnv) assemble(op *txnbuild.InvokeHostFunction, sim protocol.SimulateTransactionResponse) *txnbuild.Transaction {
	v.t.Helper()
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		v.t.Fatalf("transactionData: %v", err)
	}
	op.Ext = xdr.TransactionExt{V: 1, SorobanData: &data}
	op.Auth = nil
	for _, a := range *sim.Results[0].AuthXDR {
		var entry xdr.SorobanAuthorizationEntry
		if err := xdr.SafeUnmarshalBase64(a, &entry); err != nil {
			v.t.Fatalf("auth: %v", err)
		}
		op.Auth = append(op.Auth, entry)
	}
	return v.build(v.operator, []txnbuild.Operation{op}, 100, 0)
}

// land sends tx, closes a ledger and returns its getTransaction.
func (v *vaultEnv) land(tx interface{ Base64() (string, error) }, hash string) protocol.GetTransactionResponse {
	v.t.Helper()
	if r := v.send(b64(v.t, tx)); r.Status != "PENDING" {
		v.t.Fatalf("send: %+v", r)
	}
	v.clock.Advance(5 * time.Second)
	v.n.CloseLedger()
	return v.getTx(hash)
}

func (v *vaultEnv) call(fn, wallet string, amount int64) protocol.GetTransactionResponse {
	v.t.Helper()
	op := v.invokeOp(fn, wallet, amount)
	sim := v.simulate(v.operator, op)
	if sim.Error != "" {
		v.t.Fatalf("simulate %s: %s", fn, sim.Error)
	}
	tx := v.assemble(op, sim)
	return v.land(tx, hashOf(v.t, tx, v.n.Passphrase()))
}

// ledgerBalance reads wallet's balance entry through getLedgerEntries.
func (v *vaultEnv) ledgerBalance(wallet string) (amount int64, liveUntil uint32, found bool) {
	v.t.Helper()
	key, err := stellarsim.VaultBalanceKey(v.vault, wallet)
	if err != nil {
		v.t.Fatal(err)
	}
	kb, _ := xdr.MarshalBase64(key)
	r, err := v.rpc.GetLedgerEntries(v.ctx, protocol.GetLedgerEntriesRequest{Keys: []string{kb}})
	if err != nil {
		v.t.Fatalf("getLedgerEntries: %v", err)
	}
	if len(r.Entries) == 0 {
		return 0, 0, false
	}
	var data xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(r.Entries[0].DataXDR, &data); err != nil || data.ContractData == nil {
		v.t.Fatalf("entry: %v %+v", err, data)
	}
	i := data.ContractData.Val.I128
	if i == nil || i.Hi != 0 {
		v.t.Fatalf("balance value %+v", data.ContractData.Val)
	}
	if r.Entries[0].LiveUntilLedgerSeq == nil {
		v.t.Fatalf("no liveUntilLedgerSeq")
	}
	return int64(i.Lo), *r.Entries[0].LiveUntilLedgerSeq, true
}

func invokeCode(t *testing.T, got protocol.GetTransactionResponse) xdr.InvokeHostFunctionResultCode {
	t.Helper()
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(got.ResultXDR, &res); err != nil {
		t.Fatal(err)
	}
	ops, ok := res.OperationResults()
	if !ok || len(ops) != 1 || ops[0].Tr == nil || ops[0].Tr.InvokeHostFunctionResult == nil {
		t.Fatalf("result %+v", res)
	}
	return ops[0].Tr.InvokeHostFunctionResult.Code
}

func TestVaultSimulateShapes(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	wallet := v.funded(10 * xlm).Address()
	sim := v.simulate(v.operator, v.invokeOp("deposit", wallet, 500))
	if sim.Error != "" || sim.RestorePreamble != nil || sim.LatestLedger != 1 {
		t.Fatalf("simulate: %+v", sim)
	}
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		t.Fatal(err)
	}
	fp := data.Resources.Footprint
	if len(fp.ReadOnly) != 2 || len(fp.ReadWrite) != 1 || fp.ReadWrite[0].Type != xdr.LedgerEntryTypeContractData {
		t.Fatalf("footprint %+v", fp)
	}
	if sim.MinResourceFee <= 0 || int64(data.ResourceFee) != sim.MinResourceFee || data.Resources.Instructions == 0 || data.Resources.WriteBytes == 0 {
		t.Fatalf("resources %+v fee %d", data.Resources, sim.MinResourceFee)
	}
	if len(sim.Results) != 1 || sim.Results[0].AuthXDR == nil || len(*sim.Results[0].AuthXDR) != 1 {
		t.Fatalf("results %+v", sim.Results)
	}
	var auth xdr.SorobanAuthorizationEntry
	if err := xdr.SafeUnmarshalBase64((*sim.Results[0].AuthXDR)[0], &auth); err != nil ||
		auth.Credentials.Type != xdr.SorobanCredentialsTypeSorobanCredentialsSourceAccount ||
		string(auth.RootInvocation.Function.ContractFn.FunctionName) != "deposit" {
		t.Fatalf("auth %v %+v", err, auth)
	}
	var ret xdr.ScVal
	if err := xdr.SafeUnmarshalBase64(*sim.Results[0].ReturnValueXDR, &ret); err != nil || ret.I128 == nil || ret.I128.Lo != 500 {
		t.Fatalf("return value %v %+v", err, ret)
	}
	// Simulation changes nothing.
	if _, _, found := v.ledgerBalance(wallet); found {
		t.Fatal("simulation wrote the balance")
	}
	// A source other than the operator cannot authorize.
	other := v.funded(10 * xlm)
	op := v.invokeOp("deposit", wallet, 500)
	op.SourceAccount = other.Address()
	if sim := v.simulate(other, op); !strings.Contains(sim.Error, "Error(Auth, InvalidAction)") {
		t.Fatalf("non-operator simulate: %+v", sim)
	}
	if sim := v.simulate(v.operator, v.invokeOp("deposit", wallet, 0)); !strings.HasPrefix(sim.Error, "HostError: Error(Contract, #2)") {
		t.Fatalf("zero amount: %q", sim.Error)
	}
	if sim := v.simulate(v.operator, v.invokeOp("steal", wallet, 1)); !strings.Contains(sim.Error, "HostError: Error(WasmVm, MissingValue)") {
		t.Fatalf("unknown function: %q", sim.Error)
	}
}

func TestVaultDepositThenWithdraw(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{MinPersistentTTL: 1000})
	wallet := v.funded(10 * xlm).Address()
	before, _ := v.n.Account(v.operator.Address())
	got := v.call("deposit", wallet, 500)
	if got.Status != "SUCCESS" {
		t.Fatalf("deposit: %+v", got)
	}
	amt, live, found := v.ledgerBalance(wallet)
	if !found || amt != 500 || live != got.Ledger+1000-1 {
		t.Fatalf("after deposit: %d live until %d found %v (ledger %d)", amt, live, found, got.Ledger)
	}
	after, _ := v.n.Account(v.operator.Address())
	var res xdr.TransactionResult
	_ = xdr.SafeUnmarshalBase64(got.ResultXDR, &res)
	if before.Balance-after.Balance != int64(res.FeeCharged) || res.FeeCharged <= 100 {
		t.Fatalf("fee charged %d, balance moved %d", res.FeeCharged, before.Balance-after.Balance)
	}
	if got := v.call("withdraw", wallet, 200); got.Status != "SUCCESS" {
		t.Fatalf("withdraw: %+v", got)
	}
	amt, live2, _ := v.ledgerBalance(wallet)
	if amt != 300 || live2 <= live {
		t.Fatalf("after withdraw: %d live until %d (was %d): the contract extends the TTL on write", amt, live2, live)
	}
	live = live2
	// Contract wallets have balances too.
	cwallet := v.vault // any C... address will do
	if got := v.call("deposit", cwallet, 7); got.Status != "SUCCESS" {
		t.Fatalf("deposit to a contract wallet: %+v", got)
	}
	if amt, _, _ := v.ledgerBalance(cwallet); amt != 7 {
		t.Fatalf("contract wallet balance %d", amt)
	}
	// The TTL entry is served too.
	key, _ := stellarsim.VaultBalanceKey(v.vault, wallet)
	raw, _ := key.MarshalBinary()
	var ttlKey xdr.LedgerKey
	if err := ttlKey.SetTtl(sha(raw)); err != nil {
		t.Fatal(err)
	}
	kb, _ := xdr.MarshalBase64(ttlKey)
	r, err := v.rpc.GetLedgerEntries(v.ctx, protocol.GetLedgerEntriesRequest{Keys: []string{kb}})
	if err != nil || len(r.Entries) != 1 {
		t.Fatalf("ttl entry: %v %+v", err, r)
	}
	var ttl xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(r.Entries[0].DataXDR, &ttl); err != nil || ttl.Ttl == nil || uint32(ttl.Ttl.LiveUntilLedgerSeq) != live {
		t.Fatalf("ttl %v %+v", err, ttl)
	}
}

func TestVaultWithdrawAboveBalance(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	wallet := v.funded(10 * xlm).Address()
	v.call("deposit", wallet, 100)
	sim := v.simulate(v.operator, v.invokeOp("withdraw", wallet, 101))
	if !strings.HasPrefix(sim.Error, "HostError: Error(Contract, #1)") || sim.TransactionDataXDR != "" || len(sim.Results) != 0 {
		t.Fatalf("simulate: %+v", sim)
	}
	// Sent anyway with the resources of a valid withdraw and its own auth
	// entry, it is included and fails.
	valid := v.simulate(v.operator, v.invokeOp("withdraw", wallet, 100))
	op := v.invokeOp("withdraw", wallet, 101)
	args := *op.HostFunction.InvokeContract
	auth := []xdr.SorobanAuthorizationEntry{{
		Credentials: xdr.SorobanCredentials{Type: xdr.SorobanCredentialsTypeSorobanCredentialsSourceAccount},
		RootInvocation: xdr.SorobanAuthorizedInvocation{Function: xdr.SorobanAuthorizedFunction{
			Type: xdr.SorobanAuthorizedFunctionTypeSorobanAuthorizedFunctionTypeContractFn, ContractFn: &args},
			SubInvocations: []xdr.SorobanAuthorizedInvocation{}},
	}}
	tx := v.assemble(op, protocol.SimulateTransactionResponse{TransactionDataXDR: valid.TransactionDataXDR,
		Results: []protocol.SimulateHostFunctionResult{{AuthXDR: authOf(t, auth)}}})
	got := v.land(tx, hashOf(t, tx, v.n.Passphrase()))
	if got.Status != "FAILED" || invokeCode(t, got) != xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped {
		t.Fatalf("withdraw above balance: %+v", got)
	}
	if amt, _, _ := v.ledgerBalance(wallet); amt != 100 {
		t.Fatalf("balance changed to %d", amt)
	}
}

func authOf(t *testing.T, auth []xdr.SorobanAuthorizationEntry) *[]string {
	t.Helper()
	out := []string{}
	for _, a := range auth {
		s, err := xdr.MarshalBase64(a)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return &out
}

// The protocol 22 flow (Options.Protocol22Restore): simulation answers a
// restorePreamble, the invocation fails until a RestoreFootprint lands.
func TestProtocol22VaultArchivedBalanceIsRestoredFirst(t *testing.T) {
	v := newVaultEnvOpts(t, stellarsim.VaultOptions{MinPersistentTTL: 50}, stellarsim.Options{Protocol22Restore: true})
	wallet := v.funded(10 * xlm).Address()
	v.call("deposit", wallet, 900)
	if err := v.host.ArchiveBalance(v.vault, wallet); err != nil {
		t.Fatal(err)
	}
	if b, _ := v.host.Balance(v.vault, wallet); !b.Archived || b.Amount != 900 {
		t.Fatalf("archived balance %+v", b)
	}
	op := v.invokeOp("withdraw", wallet, 400)
	sim := v.simulate(v.operator, op)
	if sim.Error != "" || sim.RestorePreamble == nil || sim.RestorePreamble.MinResourceFee <= 0 {
		t.Fatalf("simulate: %+v", sim)
	}
	// Invoking without restoring fails with ENTRY_ARCHIVED.
	tx := v.assemble(op, sim)
	got := v.land(tx, hashOf(t, tx, v.n.Passphrase()))
	if got.Status != "FAILED" || invokeCode(t, got) != xdr.InvokeHostFunctionResultCodeInvokeHostFunctionEntryArchived {
		t.Fatalf("invoke on archived entry: %+v", got)
	}
	// RestoreFootprint with the preamble's data brings it back.
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.RestorePreamble.TransactionDataXDR, &data); err != nil {
		t.Fatal(err)
	}
	if len(data.Resources.Footprint.ReadWrite) != 1 || len(data.Resources.Footprint.ReadOnly) != 0 {
		t.Fatalf("preamble footprint %+v", data.Resources.Footprint)
	}
	restore := v.build(v.operator, []txnbuild.Operation{&txnbuild.RestoreFootprint{
		SourceAccount: v.operator.Address(), Ext: xdr.TransactionExt{V: 1, SorobanData: &data}}}, 100, 0)
	got = v.land(restore, hashOf(t, restore, v.n.Passphrase()))
	if got.Status != "SUCCESS" {
		t.Fatalf("restore: %+v", got)
	}
	if b, _ := v.host.Balance(v.vault, wallet); b.Archived || b.LiveUntil != got.Ledger+49 {
		t.Fatalf("restored balance %+v (ledger %d)", b, got.Ledger)
	}
	sim = v.simulate(v.operator, v.invokeOp("withdraw", wallet, 400))
	if sim.Error != "" || sim.RestorePreamble != nil {
		t.Fatalf("simulate after restore: %+v", sim)
	}
	if got := v.call("withdraw", wallet, 400); got.Status != "SUCCESS" {
		t.Fatalf("withdraw after restore: %+v", got)
	}
	if amt, _, _ := v.ledgerBalance(wallet); amt != 500 {
		t.Fatalf("balance %d", amt)
	}
}

func TestVaultApplyChecks(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	wallet := v.funded(10 * xlm).Address()
	v.call("deposit", wallet, 100)

	type mutate func(op *txnbuild.InvokeHostFunction, data *xdr.SorobanTransactionData)
	cases := []struct {
		name string
		m    mutate
		want xdr.InvokeHostFunctionResultCode
	}{
		{"instructions short", func(_ *txnbuild.InvokeHostFunction, d *xdr.SorobanTransactionData) { d.Resources.Instructions-- },
			xdr.InvokeHostFunctionResultCodeInvokeHostFunctionResourceLimitExceeded},
		{"write outside the footprint", func(_ *txnbuild.InvokeHostFunction, d *xdr.SorobanTransactionData) {
			d.Resources.Footprint.ReadWrite = nil
		}, xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped},
		{"no auth entry", func(op *txnbuild.InvokeHostFunction, _ *xdr.SorobanTransactionData) { op.Auth = nil },
			xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			op := v.invokeOp("withdraw", wallet, 10)
			sim := v.simulate(v.operator, op)
			v.assemble(op, sim)
			data := *op.Ext.SorobanData
			c.m(op, &data)
			op.Ext.SorobanData = &data
			tx := v.build(v.operator, []txnbuild.Operation{op}, 100, 0)
			got := v.land(tx, hashOf(t, tx, v.n.Passphrase()))
			if got.Status != "FAILED" || invokeCode(t, got) != c.want {
				t.Fatalf("got %s %v, want %v", got.Status, invokeCode(t, got), c.want)
			}
		})
	}
	if b, _ := v.host.Balance(v.vault, wallet); b.Amount != 100 {
		t.Fatalf("balance %d", b.Amount)
	}

	// Acceptance: the fee must cover the resource fee plus the inclusion fee.
	op := v.invokeOp("withdraw", wallet, 10)
	sim := v.simulate(v.operator, op)
	tx := v.assemble(op, sim)
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64(t, tx), &env); err != nil {
		t.Fatal(err)
	}
	env.V1.Tx.Fee--
	env.V1.Signatures = nil
	short, err := txnbuild.TransactionFromXDR(mustB64(t, env))
	if err != nil {
		t.Fatal(err)
	}
	stx, _ := short.Transaction()
	stx, _ = stx.Sign(v.n.Passphrase(), v.operator)
	if code, _ := errorCode(t, v.send(b64(t, stx))); code != xdr.TransactionResultCodeTxInsufficientFee {
		t.Fatalf("fee below resource fee + base fee: %v", code)
	}
	// The declared resource fee must cover the non-refundable fee of the
	// declared resources (TransactionFrame::commonValidPreSeqNum).
	op = v.invokeOp("withdraw", wallet, 10)
	v.assemble(op, v.simulate(v.operator, op))
	data := *op.Ext.SorobanData
	data.ResourceFee--
	op.Ext.SorobanData = &data
	if code, _ := errorCode(t, v.send(b64(t, v.build(v.operator, []txnbuild.Operation{op}, 100, 0)))); code != xdr.TransactionResultCodeTxSorobanInvalid {
		t.Fatalf("resource fee below the non-refundable fee: %v", code)
	}
	// A Soroban operation without the Soroban extension is malformed.
	bare := v.build(v.operator, []txnbuild.Operation{v.invokeOp("withdraw", wallet, 10)}, 100, 0)
	if code, _ := errorCode(t, v.send(b64(t, bare))); code != xdr.TransactionResultCodeTxMalformed {
		t.Fatalf("no soroban data: %v", code)
	}

	// A fee bump of a Soroban transaction pays the resource fee once.
	feeAcct := v.funded(10 * xlm)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: tx, FeeAccount: feeAcct.Address(), BaseFee: 200})
	if err != nil {
		t.Fatal(err)
	}
	fb, _ = fb.Sign(v.n.Passphrase(), feeAcct)
	h, _ := fb.HashHex(v.n.Passphrase())
	got := v.land(fb, h)
	var res xdr.TransactionResult
	_ = xdr.SafeUnmarshalBase64(got.ResultXDR, &res)
	if got.Status != "SUCCESS" || int64(res.FeeCharged) != 200+sim.MinResourceFee {
		t.Fatalf("fee bump: %s charged %d, want %d", got.Status, res.FeeCharged, 200+sim.MinResourceFee)
	}
	if b, _ := v.host.Balance(v.vault, wallet); b.Amount != 90 {
		t.Fatalf("balance after fee-bumped withdraw %d", b.Amount)
	}
}

func mustB64(t *testing.T, env xdr.TransactionEnvelope) string {
	t.Helper()
	s, err := xdr.MarshalBase64(env)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sha(b []byte) xdr.Hash {
	return xdr.Hash(sha256.Sum256(b))
}

// Protocol 23: simulation answers no restorePreamble; the invocation
// restores the archived balance itself, at a larger resource fee, and the
// unused refundable fee comes back.
func TestVaultArchivedBalanceRestoredByInvocation(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{MinPersistentTTL: 50})
	wallet := v.funded(10 * xlm).Address()
	v.call("deposit", wallet, 900)
	live := v.simulate(v.operator, v.invokeOp("withdraw", wallet, 400))
	if err := v.host.ArchiveBalance(v.vault, wallet); err != nil {
		t.Fatal(err)
	}
	op := v.invokeOp("withdraw", wallet, 400)
	sim := v.simulate(v.operator, op)
	if sim.Error != "" || sim.RestorePreamble != nil {
		t.Fatalf("simulate: %+v", sim)
	}
	if sim.MinResourceFee <= live.MinResourceFee {
		t.Fatalf("resource fee with a restore %d, without %d", sim.MinResourceFee, live.MinResourceFee)
	}
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		t.Fatal(err)
	}
	key, _ := stellarsim.VaultBalanceKey(v.vault, wallet)
	rw := data.Resources.Footprint.ReadWrite
	if data.Ext.V != 1 || data.Ext.ResourceExt == nil || len(data.Ext.ResourceExt.ArchivedSorobanEntries) != 1 ||
		int(data.Ext.ResourceExt.ArchivedSorobanEntries[0]) >= len(rw) {
		t.Fatalf("archivedSorobanEntries %+v", data.Ext)
	}
	if got, _ := xdr.MarshalBase64(rw[data.Ext.ResourceExt.ArchivedSorobanEntries[0]]); got != mustKey(t, key) {
		t.Fatal("the marked entry is not the balance")
	}

	// Without the mark, the invocation meets an archived entry and fails.
	unmarked := v.invokeOp("withdraw", wallet, 400)
	v.assemble(unmarked, sim)
	bare := *unmarked.Ext.SorobanData
	bare.Ext = xdr.SorobanTransactionDataExt{}
	unmarked.Ext.SorobanData = &bare
	tx := v.build(v.operator, []txnbuild.Operation{unmarked}, 100, 0)
	got := v.land(tx, hashOf(t, tx, v.n.Passphrase()))
	if got.Status != "FAILED" || invokeCode(t, got) != xdr.InvokeHostFunctionResultCodeInvokeHostFunctionEntryArchived {
		t.Fatalf("unmarked archived entry: %+v", got)
	}

	// With it, and 5,000 stroops more declared than needed: the invocation
	// restores the entry and the extra comes back.
	v.assemble(op, sim)
	padded := *op.Ext.SorobanData
	padded.ResourceFee += 5_000
	op.Ext.SorobanData = &padded
	tx = v.build(v.operator, []txnbuild.Operation{op}, 100, 0)
	before, _ := v.n.Account(v.operator.Address())
	got = v.land(tx, hashOf(t, tx, v.n.Passphrase()))
	if got.Status != "SUCCESS" {
		t.Fatalf("withdraw restoring the balance: %+v", got)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(got.ResultXDR, &res); err != nil {
		t.Fatal(err)
	}
	if int64(res.FeeCharged) != 100+sim.MinResourceFee {
		t.Fatalf("charged %d, want %d (inclusion + the computed resource fee)", res.FeeCharged, 100+sim.MinResourceFee)
	}
	after, _ := v.n.Account(v.operator.Address())
	if before.Balance-after.Balance != int64(res.FeeCharged) {
		t.Fatalf("balance moved by %d, charged %d", before.Balance-after.Balance, res.FeeCharged)
	}
	if b, _ := v.host.Balance(v.vault, wallet); b.Archived || b.Amount != 500 || b.LiveUntil != got.Ledger+49 {
		t.Fatalf("balance after the restoring withdraw %+v (ledger %d)", b, got.Ledger)
	}
	if amt, _, _ := v.ledgerBalance(wallet); amt != 500 {
		t.Fatalf("getLedgerEntries balance %d", amt)
	}
}

// An explicit RestoreFootprint still works under protocol 23 (a node may be
// asked for it).
func TestVaultExplicitRestoreStillWorks(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{MinPersistentTTL: 50})
	wallet := v.funded(10 * xlm).Address()
	v.call("deposit", wallet, 900)
	if err := v.host.ArchiveBalance(v.vault, wallet); err != nil {
		t.Fatal(err)
	}
	key, _ := stellarsim.VaultBalanceKey(v.vault, wallet)
	data := xdr.SorobanTransactionData{Resources: xdr.SorobanResources{Footprint: xdr.LedgerFootprint{
		ReadOnly: []xdr.LedgerKey{}, ReadWrite: []xdr.LedgerKey{key}}}}
	rop := &txnbuild.RestoreFootprint{SourceAccount: v.operator.Address(), Ext: xdr.TransactionExt{V: 1, SorobanData: &data}}
	sim := v.simulate(v.operator, rop)
	if sim.Error != "" || sim.MinResourceFee <= 0 {
		t.Fatalf("simulate restore: %+v", sim)
	}
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		t.Fatal(err)
	}
	restore := v.build(v.operator, []txnbuild.Operation{&txnbuild.RestoreFootprint{
		SourceAccount: v.operator.Address(), Ext: xdr.TransactionExt{V: 1, SorobanData: &data}}}, 100, 0)
	if got := v.land(restore, hashOf(t, restore, v.n.Passphrase())); got.Status != "SUCCESS" {
		t.Fatalf("restore: %+v", got)
	}
	if b, _ := v.host.Balance(v.vault, wallet); b.Archived || b.Amount != 900 {
		t.Fatalf("restored balance %+v", b)
	}
	if got := v.call("withdraw", wallet, 400); got.Status != "SUCCESS" {
		t.Fatalf("withdraw after restore: %+v", got)
	}
}

func mustKey(t *testing.T, k xdr.LedgerKey) string {
	t.Helper()
	s, err := xdr.MarshalBase64(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
