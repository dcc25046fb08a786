package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// The events a transaction emits, as stellar-core emits them from protocol 23 with
// EMIT_CLASSIC_EVENTS (CAP-67 unified events), which stellar-rpc's captive core always sets
// (stellar-rpc cmd/stellar-rpc/internal/daemon/daemon.go: CaptiveCoreTomlParams.EmitUnifiedEvents
// true; go-stellar-sdk ingest/ledgerbackend/toml.go then enforces EMIT_CLASSIC_EVENTS from
// protocol 23 on). Classic operations emit Stellar Asset Contract events from the asset's
// contract id (src/transactions/EventManager.cpp, OpEventManager::newTransferEvent and
// eventForTransferWithIssuerCheck); each transaction emits a fee event for its fee source before
// any transaction of the ledger applies (src/ledger/LedgerManagerImpl.cpp,
// applySequentialPhase and applyParallelPhase: TxEventManager::newFeeEvent at
// TRANSACTION_EVENT_STAGE_BEFORE_ALL_TXS) and a Soroban transaction its refund after all of them
// (TransactionFrame.cpp, processRefund: a negative fee at AFTER_ALL_TXS from protocol 23).
// Operation events are kept only when the transaction succeeds (src/transactions/TransactionMeta.cpp,
// TransactionMetaBuilder::finalize: "Operation meta is only populated when transaction
// succeeds"); transaction events always ("fees are charged even for failed transactions").

// sacContractID is the Stellar Asset Contract id of asset on the network of passphrase
// (getAssetContractID in core; go-stellar-sdk xdr.Asset.ContractID).
func sacContractID(asset Asset, passphrase string) *xdr.ContractId {
	x, err := asset.XDR()
	if err != nil {
		return nil
	}
	id, err := x.ContractID(passphrase)
	if err != nil {
		return nil
	}
	c := xdr.ContractId(id)
	return &c
}

// accountVal is account (a G... address) as an ScVal Address: core's makeAddressSCVal of
// getAddressWithDroppedMuxedInfo, so a muxed account is named by its G... account.
func accountVal(account string) xdr.ScVal {
	id, err := xdr.AddressToAccountId(account)
	if err != nil {
		return xdr.ScVal{Type: xdr.ScValTypeScvVoid}
	}
	return xdr.ScVal{Type: xdr.ScValTypeScvAddress, Address: &xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeAccount, AccountId: &id}}
}

func stringVal(s string) xdr.ScVal {
	str := xdr.ScString(s)
	return xdr.ScVal{Type: xdr.ScValTypeScvString, Str: &str}
}

func u64Val(v uint64) xdr.ScVal {
	u := xdr.Uint64(v)
	return xdr.ScVal{Type: xdr.ScValTypeScvU64, U64: &u}
}

func bytesVal(b []byte) xdr.ScVal {
	sb := xdr.ScBytes(b)
	return xdr.ScVal{Type: xdr.ScValTypeScvBytes, Bytes: &sb}
}

// memoVal is a classic memo as core's makeClassicMemoSCVal writes it in to_muxed_id: text as a
// String, an id as a u64, a hash or return hash as Bytes.
func memoVal(m xdr.Memo) xdr.ScVal {
	switch m.Type {
	case xdr.MemoTypeMemoText:
		return stringVal(m.MustText())
	case xdr.MemoTypeMemoId:
		return u64Val(uint64(m.MustId()))
	case xdr.MemoTypeMemoHash:
		h := m.MustHash()
		return bytesVal(h[:])
	default:
		h := m.MustRetHash()
		return bytesVal(h[:])
	}
}

// amountData is a transfer's or mint's data (core's getPossibleMuxedData): the amount as an i128,
// or, when the destination is muxed or the transaction has a memo, the map {amount, to_muxed_id}
// whose to_muxed_id is the muxed id (u64) or the memo (memoVal).
func amountData(to *xdr.MuxedAccount, amount int64, memo xdr.Memo) xdr.ScVal {
	amt := i128Val(amount)
	muxed := to != nil && to.Type == xdr.CryptoKeyTypeKeyTypeMuxedEd25519
	if !muxed && memo.Type == xdr.MemoTypeMemoNone {
		return amt
	}
	id := xdr.ScVal{}
	if muxed {
		id = u64Val(uint64(to.Med25519.Id))
	} else {
		id = memoVal(memo)
	}
	m := xdr.ScMap{{Key: symbol("amount"), Val: amt}, {Key: symbol("to_muxed_id"), Val: id}}
	pm := &m
	return xdr.ScVal{Type: xdr.ScValTypeScvMap, Map: &pm}
}

// sacEvent is a CONTRACT event of asset's Stellar Asset Contract.
func (ac *applyCtx) sacEvent(asset Asset, topics []xdr.ScVal, data xdr.ScVal) {
	ac.events = append(ac.events, xdr.ContractEvent{Type: xdr.ContractEventTypeContract,
		ContractId: sacContractID(asset, ac.n.passphrase),
		Body:       xdr.ContractEventBody{V: 0, V0: &xdr.ContractEventV0{Topics: topics, Data: data}}})
}

// transferEvent is core's eventForTransferWithIssuerCheck: from the issuer a mint
// ["mint", to, asset], to the issuer a burn ["burn", from, asset] (its data the bare amount),
// otherwise (or both the issuer) a transfer ["transfer", from, to, asset]. to is the destination
// as the operation named it (its muxed id goes in the data), nil when it names an account.
func (ac *applyCtx) transferEvent(asset Asset, from, toAccount string, to *xdr.MuxedAccount, amount int64) {
	memo := ac.t.env.Memo()
	assetVal := stringVal(asset.String())
	fromIssuer := !asset.IsNative() && from == asset.Issuer
	toIssuer := !asset.IsNative() && toAccount == asset.Issuer
	switch {
	case fromIssuer && !toIssuer:
		ac.sacEvent(asset, []xdr.ScVal{symbol("mint"), accountVal(toAccount), assetVal}, amountData(to, amount, memo))
	case toIssuer && !fromIssuer:
		ac.sacEvent(asset, []xdr.ScVal{symbol("burn"), accountVal(from), assetVal}, i128Val(amount))
	default:
		ac.sacEvent(asset, []xdr.ScVal{symbol("transfer"), accountVal(from), accountVal(toAccount), assetVal}, amountData(to, amount, memo))
	}
}

// feeEvent is the transaction event ["fee", feeSource] of the native asset's contract with the
// fee in stroops (negative: a refund), at stage (TxEventManager::newFeeEvent); none for 0.
func feeEvent(passphrase, feeSource string, amount int64, stage xdr.TransactionEventStage) []xdr.TransactionEvent {
	if amount == 0 {
		return nil
	}
	return []xdr.TransactionEvent{{Stage: stage, Event: xdr.ContractEvent{Type: xdr.ContractEventTypeContract,
		ContractId: sacContractID(Native, passphrase),
		Body: xdr.ContractEventBody{V: 0, V0: &xdr.ContractEventV0{
			Topics: []xdr.ScVal{symbol("fee"), accountVal(feeSource)}, Data: i128Val(amount)}}}}}
}
