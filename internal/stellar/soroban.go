package stellar

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ContractConfig is the vault-contract mode (VAULT_CONTRACTS, or VAULT_CONTRACT for one asset):
// deposits and withdrawals call the asset's vault contract's functions with (wallet: Address,
// amount: i128). A vault contract holds one asset: the request's asset picks the contract.
type ContractConfig struct {
	// Contract is the vault contract's C... address when the ledger has exactly one asset
	// (VAULT_CONTRACT). Set Contract or Contracts, not both.
	Contract string
	// Contracts maps each configured asset code (matched ignoring case) to its vault contract's
	// C... address (VAULT_CONTRACTS). Every asset needs one, and no two assets share one.
	Contracts map[string]string
	// DepositFn and WithdrawFn are the contract functions called; "" means deposit and withdraw.
	DepositFn, WithdrawFn string
	// Decimals is the asset's number of decimal places as the contract counts amounts, 1 to 18;
	// 0 means 7 (the stroop). A request amount with more decimals than this is INVALID_AMOUNT.
	Decimals int
	// RestoreAttempts bounds the RestoreFootprint transactions one Prepare submits when
	// simulation asks for a restore (a restorePreamble: nodes before protocol 23; since protocol
	// 23 the call restores archived entries itself and no RestoreFootprint is sent); 0 means 1,
	// negative means never restore (RESTORE_REQUIRED).
	RestoreAttempts int
	// RestoreTimeout bounds how long one restore may take to land (its maxTime is at most this
	// far ahead, and never past the transfer's maxTime); 0 means 30 s.
	RestoreTimeout time.Duration
}

// ContractLedger is a transfer.Ledger whose deposits and withdrawals are calls of a Soroban vault
// contract through Stellar RPC. It shares Send, Lookup, Done, the keys, the channels and the fee
// settings with the RPCLedger it wraps; only Prepare differs. The operation's source is the vault
// account (the vault key acts as the contract's operator), so the contract's require_auth is met
// by the source-account credential and no auth entry is signed.
type ContractLedger struct {
	*RPCLedger
	contracts  map[string]rawAddress // by upper(asset code), as the assets are
	depositFn  string
	withdrawFn string
	scale      *big.Int // multiply stroops by it (decimals > 7) ...
	unscale    int64    // ... or divide by it (decimals < 7)
	restores   int
	restoreFor time.Duration
}

var _ transfer.Ledger = (*ContractLedger)(nil)

// NewContractLedger checks cfg and returns the contract-mode ledger over l. It refuses a single
// Contract when l has several assets (every asset would be paid from that one contract), an
// asset without a contract, a contract for an asset l does not have, and two assets sharing a
// contract.
func NewContractLedger(l *RPCLedger, cfg ContractConfig) (*ContractLedger, error) {
	if l == nil {
		return nil, errors.New("stellar: a contract ledger needs an RPC ledger")
	}
	contracts, err := assetContracts(l.assets, cfg)
	if err != nil {
		return nil, err
	}
	c := &ContractLedger{RPCLedger: l, contracts: contracts, depositFn: cfg.DepositFn, withdrawFn: cfg.WithdrawFn,
		scale: big.NewInt(1), unscale: 1, restores: cfg.RestoreAttempts, restoreFor: cfg.RestoreTimeout}
	if c.depositFn == "" {
		c.depositFn = "deposit"
	}
	if c.withdrawFn == "" {
		c.withdrawFn = "withdraw"
	}
	for _, fn := range []string{c.depositFn, c.withdrawFn} {
		if !validSymbol(fn) {
			return nil, fmt.Errorf("stellar: contract function %q is not a Soroban symbol (1 to 32 of a-z A-Z 0-9 _)", fn)
		}
	}
	d := cfg.Decimals
	if d == 0 {
		d = 7
	}
	if d < 1 || d > maxContractDecimals {
		return nil, fmt.Errorf("stellar: asset decimals %d out of range 1..%d", cfg.Decimals, maxContractDecimals)
	}
	if d > 7 {
		c.scale.Exp(big.NewInt(10), big.NewInt(int64(d-7)), nil)
	}
	for ; d < 7; d++ {
		c.unscale *= 10
	}
	if c.restores == 0 {
		c.restores = 1
	}
	if c.restoreFor <= 0 {
		c.restoreFor = 30 * time.Second
	}
	return c, nil
}

// maxContractDecimals bounds ContractConfig.Decimals: math.MaxInt64 stroops at 18 decimals is
// about 9.2e29, well inside i128 (about 1.7e38).
const maxContractDecimals = 18

// assetContracts pairs every configured asset with its vault contract (see NewContractLedger).
func assetContracts(assets assetSet, cfg ContractConfig) (map[string]rawAddress, error) {
	named := cfg.Contracts
	switch {
	case cfg.Contract != "" && len(cfg.Contracts) > 0:
		return nil, errors.New("stellar: set one vault contract (Contract) or one per asset (Contracts), not both")
	case cfg.Contract != "":
		if len(assets) != 1 {
			return nil, fmt.Errorf("stellar: one vault contract for %d assets: name each asset's contract (VAULT_CONTRACTS=CODE:C...,CODE:C...)", len(assets))
		}
		for _, a := range assets {
			named = map[string]string{a.credit.Code: cfg.Contract}
		}
	case len(cfg.Contracts) == 0:
		return nil, errors.New("stellar: a contract ledger needs a vault contract")
	}
	out := map[string]rawAddress{}
	seen := map[rawAddress]string{}
	for code, contract := range named {
		a, ok := assets.find(code)
		if !ok {
			return nil, fmt.Errorf("stellar: vault contract for asset %q, which is not configured", clipCode(code))
		}
		k, err := decodeContract(contract)
		if err != nil {
			return nil, fmt.Errorf("stellar: the vault contract of %s is not a C... address", a.credit.Code)
		}
		if other, dup := seen[k]; dup {
			return nil, fmt.Errorf("stellar: assets %s and %s name the same vault contract; a contract holds one asset", other, a.credit.Code)
		}
		key := strings.ToUpper(a.credit.Code)
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("stellar: asset %s has two vault contracts", a.credit.Code)
		}
		seen[k] = a.credit.Code
		out[key] = k
	}
	for key, a := range assets {
		if _, ok := out[key]; !ok {
			return nil, fmt.Errorf("stellar: asset %s has no vault contract", a.credit.Code)
		}
	}
	return out, nil
}

var symbolRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)

func validSymbol(s string) bool { return symbolRE.MatchString(s) }

// VaultErrInsufficientBalance is the vault contract's error code for a withdrawal above its
// balance (README.md, "The vault contract (Soroban)": #1 = insufficient balance).
const VaultErrInsufficientBalance = 1

// contractErrorRE finds the contract's own error code in a simulation error ("Error(Contract, #1)").
var contractErrorRE = regexp.MustCompile(`Error\(Contract, #(\d+)\)`)

// hostErrorRE finds the host error in a simulation error ("Error(Auth, InvalidAction)").
var hostErrorRE = regexp.MustCompile(`Error\([A-Za-z]+, #?[A-Za-z0-9]+\)`)

// ContractErrorCode returns the contract error code in a simulateTransaction error text, if any.
func ContractErrorCode(simError string) (uint32, bool) {
	m := contractErrorRE.FindStringSubmatch(simError)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 32)
	return uint32(n), err == nil
}

// Admit is transfer.Admission's for the contract: it decides nothing, so every contract call
// claims first and is answered CHANNELS_BUSY, when it is, by Prepare. The classic admission
// (common.Admit) would answer busy a request the contract's own checks refuse before they ask for
// a source (an amount finer than the asset's decimals, a deposit's shape), and the client would
// retry, after the Retry-After, a request that can never go through.
func (l *ContractLedger) Admit(ctx context.Context, _ transfer.Request, _ time.Time) (context.Context, error) {
	return ctx, nil
}

// Release is transfer.Admission's: Admit set nothing aside.
func (l *ContractLedger) Release(context.Context) {}

// Prepare builds and signs a call of the asset's vault contract for req: deposit or withdraw
// (wallet: Address, amount: i128 in the asset's smallest unit), timebounds {0, maxTime}. It
// simulates the call (simulateTransaction) and assembles the simulation's transaction data as is
// (footprint, resources, resource fee and, since protocol 23, archivedSorobanEntries: the call
// then restores an archived vault balance itself, at a higher resource fee) and its auth, offers
// the inclusion fee as RPCLedger does (raised after a txINSUFFICIENT_FEE refusal), and signs (and
// fee-bumps, with channels). The total (resource fee plus inclusion fee) stays within
// MAX_FEE_STROOPS, or Prepare refuses before signing anything. When a node still answers a
// restorePreamble (before protocol 23), it restores first: a RestoreFootprint transaction from
// the same source, awaited, then simulated again, at most RestoreAttempts times. Nothing of the
// transfer is sent; such a restore is the only transaction Prepare may submit, and it moves no
// money.
//
// Errors (nothing of the transfer was sent in any case): *transfer.ValidationError (422) for an
// unsupported operation, an address that is neither G... nor C..., a wallet that is the vault,
// the asset's issuer, a vault contract, the fee account or a channel account, an unknown asset,
// a bad amount; *transfer.UnavailableError SIMULATION_ERROR (retryable) when simulation fails,
// with the contract's error code in the detail, or when the fees exceed MAX_FEE_STROOPS;
// RESTORE_REQUIRED (retryable) when archived entries must be restored and the restore's fee
// would exceed MAX_FEE_STROOPS (the detail gives the fee needed and the cap, in stroops), or an
// explicit restore could not complete within the budget; the RPCLedger's errors for keys,
// channels and the source account; a wrapped error when the RPC could not be reached or answered
// wrongly.
func (l *ContractLedger) Prepare(ctx context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	maxTime := terms.MaxTime
	call, err := l.validate(req)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if maxTime.Unix() <= 0 {
		return transfer.Envelope{}, errors.New("stellar: Prepare needs a maxTime (timebounds must be bounded)")
	}
	keys, err := l.loadKeys(ctx)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if err := l.guardWallet(call.wallet, call.asset, keys, l.contractList()...); err != nil {
		return transfer.Envelope{}, err
	}
	ch := rpcChain{l.RPCLedger}
	return l.withSource(ctx, ch, keys, maxTime, func(lease sources.Lease) (transfer.Envelope, error) {
		return l.buildCall(ctx, ch, lease, call, terms)
	})
}

// contractCall is one call of a vault contract: contract.fn(wallet, amount).
type contractCall struct {
	contract rawAddress
	fn       string
	wallet   rawAddress
	asset    vaultAsset
	amount   xdr.Int128Parts // in the contract's unit
}

// contractList is every vault contract of this ledger.
func (l *ContractLedger) contractList() []rawAddress {
	out := make([]rawAddress, 0, len(l.contracts))
	for _, k := range l.contracts {
		out = append(out, k)
	}
	return out
}

// validate checks req for a contract call and returns the call: the asset's contract, the
// function, the wallet and the amount in the contract's unit.
//
// A memo or a muxed (M...) wallet is refused (MEMO_NOT_SUPPORTED, 422) before anything is built,
// since the network would not carry it on this call:
//
//   - A memo: Stellar RPC's simulateTransaction, which every call goes through, refuses a
//     Soroban transaction with a memo ("Transaction contains a memo. Soroban transactions do not
//     support memos."). stellar-core refuses an InvokeHostFunction transaction with a memo or a
//     muxed source as txSOROBAN_INVALID from protocol 25 wherever it judges validity
//     (TransactionFrame::commonValidPreSeqNum, validateSorobanMemo; internal/stellarsim models
//     it, validity.go); before protocol 25 its queue refused one whose authorization was not only
//     the source account's (src/herder/TransactionQueue.cpp, validateSorobanMemo: "non-source
//     auth Soroban tx uses memo or muxed source account"). CAP-64, which would have let an
//     authorization sign the memo, was rejected. A withdrawal's memo would reach no one anyway:
//     CAP-67 turns a transaction's memo into a transfer event's to_muxed_id only for classic
//     operations, never for a contract's transfer.
//   - A muxed wallet: protocol 23 (CAP-67, "Multiplexing support") adds SC_ADDRESS_TYPE_MUXED_ACCOUNT,
//     but as a MuxedAddressObject that "is not implicitly compatible with AddressObject": a
//     contract whose argument is an Address (the vault's deposit and withdraw(wallet: Address,
//     amount: i128)) fails when given one; only the Stellar Asset Contract's transfer takes it as
//     its to. Passing the G... account instead would drop the id the exchange credits by.
//
// Retrying cannot change either, so both are the client's mistake, never a 503 SIMULATION_ERROR
// to retry for ever.
func (l *ContractLedger) validate(req transfer.Request) (contractCall, error) {
	var call contractCall
	if !req.Memo.IsZero() {
		return contractCall{}, memoNotSupported("memo", "the vault contract's call cannot carry a memo (Soroban transactions do not support memos); send it without one, or pay a G... or M... account from a classic deployment")
	}
	if req.Account != "" || strings.HasPrefix(req.WalletAddress, "M") {
		return contractCall{}, memoNotSupported("walletAddress", "the vault contract takes a G... account or a C... contract, not a muxed (M...) account; a contract call cannot carry the muxed id")
	}
	switch req.OperationType {
	case transfer.Deposit:
		call.fn = l.depositFn
	case transfer.Withdraw:
		call.fn = l.withdrawFn
	default:
		return contractCall{}, notSupported(fmt.Sprintf("operation %q is not supported", req.OperationType))
	}
	var err error
	if call.wallet, err = decodeAddress(req.WalletAddress); err != nil {
		return contractCall{}, invalidWallet("walletAddress must be a G... account or a C... contract")
	}
	var ok bool
	if call.asset, ok = l.assets.find(req.Asset); !ok {
		return contractCall{}, unknownAsset(req.Asset)
	}
	call.contract = l.contracts[strings.ToUpper(call.asset.credit.Code)]
	badAmount := func(detail string) error {
		return &transfer.ValidationError{Code: transfer.CodeInvalidAmount, Kind: transfer.KindUnacceptable, Field: "amount", Detail: detail}
	}
	if req.Stroops <= 0 {
		return contractCall{}, badAmount("amount must be greater than zero")
	}
	if req.Stroops%l.unscale != 0 {
		return contractCall{}, badAmount("amount has more decimal places than the asset")
	}
	units := new(big.Int).Mul(big.NewInt(req.Stroops/l.unscale), l.scale)
	if call.amount, err = toInt128(units); err != nil {
		// Unreachable with at most 18 decimals (see maxContractDecimals); kept as a guard.
		return contractCall{}, badAmount("amount is too large")
	}
	return call, nil
}

// toInt128 is v as an XDR i128 (two's complement: hi is the upper 64 bits, signed, lo the lower
// 64, unsigned); an error when v does not fit in 127 bits and a sign.
func toInt128(v *big.Int) (xdr.Int128Parts, error) {
	if v.Sign() < 0 || v.BitLen() > 127 {
		return xdr.Int128Parts{}, fmt.Errorf("stellar: %s does not fit a non-negative i128", v)
	}
	lo := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0)))
	hi := new(big.Int).Rsh(v, 64)
	return xdr.Int128Parts{Hi: xdr.Int64(hi.Int64()), Lo: xdr.Uint64(lo.Uint64())}, nil
}

// buildCall simulates, restores if asked, assembles and signs the contract call.
func (l *ContractLedger) buildCall(ctx context.Context, ch rpcChain, lease sources.Lease, call contractCall, terms transfer.Terms) (transfer.Envelope, error) {
	maxTime := terms.MaxTime
	fn := call.fn
	contract, wallet := call.contract.scAddress(), call.wallet.scAddress()
	amount := call.amount
	operator := l.vaultAccount
	for restored := 0; ; restored++ {
		// The fee account comes with the sequence number (one getLedgerEntries): checkFunds. The
		// vault's balance is the simulation's to judge (simulationError).
		snap, err := ch.accounts(ctx, l.fundsQuery(lease, txnbuild.CreditAsset{}, false))
		if err != nil {
			return transfer.Envelope{}, err
		}
		seq := snap.source.seq
		op := &txnbuild.InvokeHostFunction{
			HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract, InvokeContract: &xdr.InvokeContractArgs{
				ContractAddress: contract, FunctionName: xdr.ScSymbol(fn),
				Args: xdr.ScVec{{Type: xdr.ScValTypeScvAddress, Address: &wallet}, {Type: xdr.ScValTypeScvI128, I128: &amount}},
			}},
			SourceAccount: operator,
		}
		draft, err := l.transaction(lease, seq, op, txnbuild.MinBaseFee, terms)
		if err != nil {
			return transfer.Envelope{}, err
		}
		draftXDR, err := draft.Base64()
		if err != nil {
			return transfer.Envelope{}, fmt.Errorf("stellar: encoding the simulation draft: %w", err)
		}
		sim, err := l.simulate(ctx, draftXDR)
		if err != nil {
			return transfer.Envelope{}, err
		}
		if sim.Error != "" {
			return transfer.Envelope{}, simulationError(fn, sim.Error)
		}
		if sim.RestorePreamble != nil {
			if restored >= l.restores {
				return transfer.Envelope{}, &transfer.UnavailableError{Code: transfer.CodeRestoreRequired, RetryAfter: 5 * time.Second,
					Detail: "the contract's ledger entries are archived and could not be restored within the budget; nothing was submitted"}
			}
			if err := l.restore(ctx, ch, lease, seq, *sim.RestorePreamble, maxTime); err != nil {
				var capped *transfer.UnavailableError
				if errors.As(err, &capped) && capped.Code == transfer.CodeRestoreRequired {
					return transfer.Envelope{}, err // over MAX_FEE_STROOPS: refused before sending it
				}
				return transfer.Envelope{}, &transfer.UnavailableError{Code: transfer.CodeRestoreRequired, RetryAfter: 5 * time.Second,
					Detail: "the contract's ledger entries are archived and the restore did not complete; nothing was submitted", Err: err}
			}
			continue
		}
		if err := assemble(op, sim); err != nil {
			return transfer.Envelope{}, err
		}
		env, err := l.sign(ctx, ch, lease, seq, op, terms)
		if err != nil {
			return transfer.Envelope{}, err
		}
		if err := l.checkFunds(ctx, ch, lease, snap, env, 0, vaultAsset{}, false); err != nil {
			return transfer.Envelope{}, err
		}
		return env, nil
	}
}

// simulationError types a failed simulation: SIMULATION_ERROR, retryable (README.md, "Problem types": raised on
// the simulate path, nothing sent), with the contract's error code in the detail when there is one.
//
// A withdraw refused with the vault contract's insufficient-balance error (VaultErrInsufficientBalance,
// README.md, "The vault contract (Soroban)") is VAULT_UNDERFUNDED instead, the answer a classic vault gives
// when its payment is included FAILED op_underfunded (transfer.SourceShortfall): one answer for an
// empty vault in both modes, retryable, and it pages; here nothing was sent and no fee spent.
func simulationError(fn, simError string) *transfer.UnavailableError {
	detail := fmt.Sprintf("simulating %s failed; nothing was submitted", fn)
	if code, ok := ContractErrorCode(simError); ok && code == VaultErrInsufficientBalance && fn == "withdraw" {
		return &transfer.UnavailableError{Code: transfer.CodeVaultUnderfunded, RetryAfter: time.Minute,
			Detail: "the vault contract's balance cannot cover the withdrawal (contract error #1); nothing was submitted: retry with the same key once the vault is funded",
			Err:    errors.New(firstLine(simError))}
	}
	if code, ok := ContractErrorCode(simError); ok {
		detail = fmt.Sprintf("simulating %s failed with contract error #%d; nothing was submitted", fn, code)
	} else if m := hostErrorRE.FindString(simError); m != "" {
		detail = fmt.Sprintf("simulating %s failed with %s; nothing was submitted", fn, m)
	}
	// The full text (an event log) goes to the wrapped error for the logs, not to the caller.
	return &transfer.UnavailableError{Code: transfer.CodeSimulationError, Detail: detail, Err: errors.New(firstLine(simError))}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// assemble puts the simulation's transaction data and auth entries on op. Only source-account
// credentials are accepted: the operator is the operation source, and nothing else is signed.
func assemble(op *txnbuild.InvokeHostFunction, sim protocol.SimulateTransactionResponse) error {
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		return fmt.Errorf("stellar: simulateTransaction: decoding transactionData: %w", err)
	}
	if len(sim.Results) != 1 {
		return fmt.Errorf("stellar: simulateTransaction: want 1 result, got %d", len(sim.Results))
	}
	op.Auth = nil
	if sim.Results[0].AuthXDR != nil {
		for _, a := range *sim.Results[0].AuthXDR {
			var entry xdr.SorobanAuthorizationEntry
			if err := xdr.SafeUnmarshalBase64(a, &entry); err != nil {
				return fmt.Errorf("stellar: simulateTransaction: decoding auth: %w", err)
			}
			if entry.Credentials.Type != xdr.SorobanCredentialsTypeSorobanCredentialsSourceAccount {
				return &transfer.UnavailableError{Code: transfer.CodeSimulationError,
					Detail: "the vault contract asks for an authorization other than the operator's; nothing was submitted"}
			}
			op.Auth = append(op.Auth, entry)
		}
	}
	op.Ext = xdr.TransactionExt{V: 1, SorobanData: &data}
	return nil
}

// transaction builds the unsigned transaction of one Soroban operation from lease's account.
func (l *ContractLedger) transaction(lease sources.Lease, seq int64, op txnbuild.Operation, baseFee int64, terms transfer.Terms) (*txnbuild.Transaction, error) {
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: lease.Account, Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           []txnbuild.Operation{op},
		BaseFee:              baseFee,
		Preconditions:        txnbuild.Preconditions{TimeBounds: timebounds(terms)},
	})
	if err != nil {
		return nil, fmt.Errorf("stellar: building the transaction: %w", err)
	}
	return tx, nil
}

// restore submits a RestoreFootprint transaction with the preamble's data from lease's account
// (sequence seq+1) and waits until it lands. Its maxTime is RestoreTimeout ahead (never past the
// transfer's): an error means it failed, was refused, or did not land by then. A restore that
// lands later anyway is harmless: it moves no money, and the next simulation sees it.
func (l *ContractLedger) restore(ctx context.Context, ch rpcChain, lease sources.Lease, seq int64, pre protocol.RestorePreamble, maxTime time.Time) error {
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(pre.TransactionDataXDR, &data); err != nil {
		return fmt.Errorf("stellar: decoding the restore preamble: %w", err)
	}
	until := l.clock.Now().Add(l.restoreFor)
	if until.After(maxTime) {
		until = maxTime
	}
	op := &txnbuild.RestoreFootprint{SourceAccount: l.vaultAccount, Ext: xdr.TransactionExt{V: 1, SorobanData: &data}}
	env, err := l.sign(ctx, ch, lease, seq, op, transfer.Terms{MaxTime: until})
	if err != nil {
		return err
	}
	res, err := l.Send(ctx, env)
	if err != nil {
		return fmt.Errorf("stellar: sending the restore: %w", err)
	}
	if res.Status != transfer.SendPending && res.Status != transfer.SendDuplicate {
		return fmt.Errorf("stellar: the restore was refused: %s %s", res.Status, res.Code)
	}
	for {
		lk, err := l.Lookup(ctx, env)
		if err == nil {
			switch {
			case lk.Status == transfer.LookupSuccess:
				return nil
			case lk.Status == transfer.LookupFailed:
				return fmt.Errorf("stellar: the restore failed: %v", lk.ResultCodes)
			case lk.LatestLedgerCloseTime.After(until):
				return errors.New("stellar: the restore did not land before its maxTime")
			}
		}
		if l.clock.Now().After(until.Add(l.restoreFor)) {
			// No ledger has closed past its maxTime for as long again: the network is stalled.
			return errors.New("stellar: no ledger closed after the restore's maxTime")
		}
		if err := l.clock.Sleep(ctx, time.Second); err != nil {
			return fmt.Errorf("stellar: waiting for the restore: %w", err)
		}
	}
}

// simulate calls simulateTransaction.
func (l *RPCLedger) simulate(ctx context.Context, txXDR string) (protocol.SimulateTransactionResponse, error) {
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.SimulateTransactionResponse, error) {
		return c.SimulateTransaction(ctx, protocol.SimulateTransactionRequest{Transaction: txXDR})
	})
	if err != nil {
		return resp, fmt.Errorf("stellar: simulateTransaction: %w", err)
	}
	return resp, nil
}
