package stellarsim

import (
	"fmt"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// execution is a call's effect and what it consumed.
type execution struct {
	ret          xdr.ScVal
	write        *contractEntry // the balance entry's new state; nil when nothing is written
	instructions uint32
	readBytes    uint32
	writeBytes   uint32
	rent         int             // entries created
	archived     []xdr.LedgerKey // archived entries the call read, as if restored
}

// execLocked runs c as of ledger. Archived entries are read as if restored
// and listed (simulation's view); apply refuses them before calling.
func (h *VaultHost) execLocked(c *call, ledger uint32) (execution, *hostError) {
	var x execution
	ro, _ := h.footprint(c)
	for _, k := range ro[:2] {
		e := h.entries[keyString(k)]
		if e == nil {
			return x, systemError(xdr.ScErrorTypeSceStorage, xdr.ScErrorCodeScecMissingValue, "contract instance or code missing")
		}
		if e.liveUntil < ledger {
			x.archived = append(x.archived, k)
		}
		x.readBytes += entrySize(e)
	}
	balKey := balanceLedgerKey(c.v.addr, c.wallet)
	old := h.entries[keyString(balKey)]
	var cur int64
	if old != nil {
		if old.liveUntil < ledger {
			x.archived = append(x.archived, balKey)
		}
		cur, _ = i128ToInt64(old.data.ContractData.Val)
		x.readBytes += entrySize(old)
	}
	next := cur
	switch c.fn {
	case fnBalance:
		x.instructions = instructionsRead
		x.ret = i128Val(cur)
		return x, nil
	case fnDeposit:
		if cur > (1<<63-1)-c.amount {
			return x, systemError(xdr.ScErrorTypeSceObject, xdr.ScErrorCodeScecArithDomain, "balance overflow")
		}
		next = cur + c.amount
	case fnWithdraw:
		if cur < c.amount {
			return x, contractError(VaultErrInsufficientBalance, fmt.Sprintf("withdraw %d above the balance %d", c.amount, cur))
		}
		next = cur - c.amount
	}
	x.instructions = instructionsWrite
	x.ret = i128Val(next)
	live := ledger + h.opts.MinPersistentTTL - 1
	if old == nil {
		x.rent = 1
	} else {
		live = max(live, old.liveUntil)
	}
	x.write = &contractEntry{key: balKey, lastModified: ledger, liveUntil: live, data: xdr.LedgerEntryData{
		Type: xdr.LedgerEntryTypeContractData,
		ContractData: &xdr.ContractDataEntry{Contract: c.v.addr, Key: balKey.ContractData.Key,
			Durability: xdr.ContractDataDurabilityPersistent, Val: i128Val(next)},
	}}
	x.writeBytes = entrySize(x.write)
	return x, nil
}

// restorePlanLocked lists the archived entries among keys (only persistent
// contract data and code can be restored) and their size.
func (h *VaultHost) restorePlanLocked(keys []xdr.LedgerKey, ledger uint32) (archived []*contractEntry, size uint32, ok bool) {
	for _, k := range keys {
		if !persistentKey(k) {
			return nil, 0, false
		}
		e := h.entries[keyString(k)]
		if e != nil && e.liveUntil < ledger {
			archived = append(archived, e)
			size += entrySize(e)
		}
	}
	return archived, size, true
}

func persistentKey(k xdr.LedgerKey) bool {
	switch k.Type {
	case xdr.LedgerEntryTypeContractCode:
		return true
	case xdr.LedgerEntryTypeContractData:
		return k.ContractData.Durability == xdr.ContractDataDurabilityPersistent
	}
	return false
}

func containsKey(keys []xdr.LedgerKey, k xdr.LedgerKey) bool {
	ks := keyString(k)
	for _, x := range keys {
		if keyString(x) == ks {
			return true
		}
	}
	return false
}

// Apply runs InvokeHostFunction, RestoreFootprint and ExtendFootprintTtl at
// ledger close (see VaultHost for the rules).
func (h *VaultHost) Apply(ctx ContractContext, op xdr.Operation) (xdr.OperationResult, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	ledger := ctx.Ledger.Sequence
	switch op.Body.Type {
	case xdr.OperationTypeInvokeHostFunction:
		return h.applyInvoke(ctx, *op.Body.InvokeHostFunctionOp, ledger)
	case xdr.OperationTypeRestoreFootprint:
		return h.applyRestore(ctx, ledger)
	case xdr.OperationTypeExtendFootprintTtl:
		return h.applyExtend(ctx, uint32(op.Body.ExtendFootprintTtlOp.ExtendTo), ledger)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, false
}

func invokeResult(code xdr.InvokeHostFunctionResultCode, ret *xdr.ScVal) xdr.OperationResult {
	var arm any
	if code == xdr.InvokeHostFunctionResultCodeInvokeHostFunctionSuccess {
		pre := xdr.InvokeHostFunctionSuccessPreImage{ReturnValue: *ret, Events: []xdr.ContractEvent{}}
		b, _ := pre.MarshalBinary()
		arm = xdr.Hash(sha256Sum(b))
	}
	r, _ := xdr.NewInvokeHostFunctionResult(code, arm)
	return opInner(xdr.OperationTypeInvokeHostFunction, r)
}

// applyInvoke runs an invocation at ledger close. Footprint entries are
// loaded before the contract runs. Since protocol 23 (ctx.Protocol23) an
// archived entry is restored by the invocation itself when it is in the
// read-write footprint and marked in archivedSorobanEntries; any other
// archived entry fails the operation with ENTRY_ARCHIVED
// (InvokeHostFunctionParallelApplyHelper::handleArchivedEntry,
// src/transactions/InvokeHostFunctionOpFrame.cpp). Before protocol 23 every
// archived entry fails it (InvokeHostFunctionPreV23ApplyHelper).
func (h *VaultHost) applyInvoke(ctx ContractContext, op xdr.InvokeHostFunctionOp, ledger uint32) (xdr.OperationResult, bool) {
	fail := func(code xdr.InvokeHostFunctionResultCode) (xdr.OperationResult, bool) {
		return invokeResult(code, nil), false
	}
	sd := ctx.Soroban
	if sd == nil {
		return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionMalformed)
	}
	fp := sd.Resources.Footprint
	marked := map[int]bool{}
	if ctx.Protocol23 && sd.Ext.V == 1 && sd.Ext.ResourceExt != nil {
		for _, i := range sd.Ext.ResourceExt.ArchivedSorobanEntries {
			marked[int(i)] = true
		}
	}
	archived := func(k xdr.LedgerKey) *contractEntry {
		if e := h.entries[keyString(k)]; e != nil && persistentKey(k) && e.liveUntil < ledger {
			return e
		}
		return nil
	}
	for _, k := range fp.ReadOnly {
		if archived(k) != nil {
			return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionEntryArchived)
		}
	}
	var restore []*contractEntry
	for i, k := range fp.ReadWrite {
		if e := archived(k); e != nil {
			if !marked[i] {
				return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionEntryArchived)
			}
			restore = append(restore, e)
		}
	}
	c, herr := h.parseLocked(op.HostFunction)
	if herr != nil {
		return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped)
	}
	ro, rw := h.footprint(c)
	for _, k := range ro {
		if !containsKey(fp.ReadOnly, k) && !containsKey(fp.ReadWrite, k) {
			return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped) // read outside the footprint
		}
	}
	for _, k := range rw {
		if !containsKey(fp.ReadWrite, k) {
			return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped) // write outside the footprint
		}
	}
	if c.fn != fnBalance && !c.authorized(ctx.Source, op.Auth) {
		return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped) // Error(Auth, InvalidAction)
	}
	x, herr := h.execLocked(c, ledger)
	if herr != nil {
		return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionTrapped)
	}
	// A restored entry is written back (its TTL at least); the call's own
	// write of it is counted once.
	for _, e := range restore {
		if x.write == nil || keyString(x.write.key) != keyString(e.key) {
			x.writeBytes += entrySize(e)
		}
	}
	r := sd.Resources
	if x.instructions > uint32(r.Instructions) || x.readBytes > uint32(r.DiskReadBytes) || x.writeBytes > uint32(r.WriteBytes) {
		return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionResourceLimitExceeded)
	}
	if ctx.Protocol23 {
		// The refundable part (rent of created and restored entries) must
		// fit in what the declared fee leaves above its non-refundable part.
		consumed := rentFee(x.rent + len(restore))
		if int64(sd.ResourceFee)-nonRefundableFee(r) < consumed {
			return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionInsufficientRefundableFee)
		}
		*ctx.Refundable = consumed
	} else {
		used := xdr.SorobanResources{Footprint: fp, Instructions: xdr.Uint32(x.instructions), DiskReadBytes: xdr.Uint32(x.readBytes), WriteBytes: xdr.Uint32(x.writeBytes)}
		if int64(sd.ResourceFee) < resourceFee(used, x.rent) {
			return fail(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionInsufficientRefundableFee)
		}
	}
	for _, e := range restore {
		h.saveLocked(ledger, e.key)
		e.liveUntil = ledger + h.opts.MinPersistentTTL - 1
	}
	if x.write != nil {
		h.saveLocked(ledger, x.write.key)
		h.putLocked(x.write.key, x.write.data, x.write.lastModified, x.write.liveUntil)
	}
	if ctx.Return != nil {
		ctx.Return(x.ret)
	}
	if ctx.Emit != nil && c.fn != fnBalance {
		// The vault's own event of a deposit or withdraw (a contract's events are its own
		// design; this one publishes [function, wallet] and the amount, as a SEP-41 token's mint
		// and burn do): the contract event the host records for the operation.
		id := *c.v.addr.ContractId
		ctx.Emit(xdr.ContractEvent{Type: xdr.ContractEventTypeContract, ContractId: &id,
			Body: xdr.ContractEventBody{V: 0, V0: &xdr.ContractEventV0{
				Topics: []xdr.ScVal{symbol(string(c.args.FunctionName)), addressVal(c.wallet)}, Data: i128Val(c.amount)}}})
	}
	return invokeResult(xdr.InvokeHostFunctionResultCodeInvokeHostFunctionSuccess, &x.ret), true
}

func restoreResult(code xdr.RestoreFootprintResultCode) xdr.OperationResult {
	r, _ := xdr.NewRestoreFootprintResult(code, nil)
	return opInner(xdr.OperationTypeRestoreFootprint, r)
}

func (h *VaultHost) applyRestore(ctx ContractContext, ledger uint32) (xdr.OperationResult, bool) {
	sd := ctx.Soroban
	if sd == nil || len(sd.Resources.Footprint.ReadOnly) != 0 {
		return restoreResult(xdr.RestoreFootprintResultCodeRestoreFootprintMalformed), false
	}
	archived, size, ok := h.restorePlanLocked(sd.Resources.Footprint.ReadWrite, ledger)
	if !ok {
		return restoreResult(xdr.RestoreFootprintResultCodeRestoreFootprintMalformed), false
	}
	if size > uint32(sd.Resources.DiskReadBytes) || size > uint32(sd.Resources.WriteBytes) {
		return restoreResult(xdr.RestoreFootprintResultCodeRestoreFootprintResourceLimitExceeded), false
	}
	used := xdr.SorobanResources{Footprint: sd.Resources.Footprint, DiskReadBytes: xdr.Uint32(size), WriteBytes: xdr.Uint32(size)}
	if !h.refundableFits(ctx, used, len(archived)) {
		return restoreResult(xdr.RestoreFootprintResultCodeRestoreFootprintInsufficientRefundableFee), false
	}
	for _, e := range archived {
		h.saveLocked(ledger, e.key)
		e.liveUntil = ledger + h.opts.MinPersistentTTL - 1
	}
	return restoreResult(xdr.RestoreFootprintResultCodeRestoreFootprintSuccess), true
}

func extendResult(code xdr.ExtendFootprintTtlResultCode) xdr.OperationResult {
	r, _ := xdr.NewExtendFootprintTtlResult(code, nil)
	return opInner(xdr.OperationTypeExtendFootprintTtl, r)
}

// applyExtend extends the live read-only entries to live until ledger+extendTo.
func (h *VaultHost) applyExtend(ctx ContractContext, extendTo, ledger uint32) (xdr.OperationResult, bool) {
	sd := ctx.Soroban
	if sd == nil || len(sd.Resources.Footprint.ReadWrite) != 0 {
		return extendResult(xdr.ExtendFootprintTtlResultCodeExtendFootprintTtlMalformed), false
	}
	var live []*contractEntry
	var size uint32
	for _, k := range sd.Resources.Footprint.ReadOnly {
		if !persistentKey(k) {
			return extendResult(xdr.ExtendFootprintTtlResultCodeExtendFootprintTtlMalformed), false
		}
		if e := h.entries[keyString(k)]; e != nil && e.liveUntil >= ledger {
			live = append(live, e)
			size += entrySize(e)
		}
	}
	if size > uint32(sd.Resources.DiskReadBytes) {
		return extendResult(xdr.ExtendFootprintTtlResultCodeExtendFootprintTtlResourceLimitExceeded), false
	}
	used := xdr.SorobanResources{Footprint: sd.Resources.Footprint, DiskReadBytes: xdr.Uint32(size)}
	if !h.refundableFits(ctx, used, len(live)) {
		return extendResult(xdr.ExtendFootprintTtlResultCodeExtendFootprintTtlInsufficientRefundableFee), false
	}
	for _, e := range live {
		h.saveLocked(ledger, e.key)
		e.liveUntil = max(e.liveUntil, ledger+extendTo)
	}
	return extendResult(xdr.ExtendFootprintTtlResultCodeExtendFootprintTtlSuccess), true
}

// refundableFits checks the declared resource fee against an operation that
// pays rent for rent entries, and reports the rent as consumed. Since
// protocol 23 the non-refundable part comes from the declared resources and
// the rent from what is left (RefundableFeeTracker); before, the whole fee of
// the used resources was compared with the declared fee.
func (h *VaultHost) refundableFits(ctx ContractContext, used xdr.SorobanResources, rent int) bool {
	if !ctx.Protocol23 {
		return int64(ctx.Soroban.ResourceFee) >= resourceFee(used, rent)
	}
	consumed := rentFee(rent)
	if int64(ctx.Soroban.ResourceFee)-nonRefundableFee(ctx.Soroban.Resources) < consumed {
		return false
	}
	*ctx.Refundable = consumed
	return true
}
