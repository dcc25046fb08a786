package stellarsim

import (
	"crypto/sha256"
	"encoding/json"
	"net/http"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"
)

func sha256Sum(b []byte) [32]byte { return sha256.Sum256(b) }

// The optional host capabilities the network looks for (see ContractHost).
type (
	networkAttacher interface{ attach(n *Network) }
	simulator       interface {
		simulate(latest LedgerInfo, req protocol.SimulateTransactionRequest) (protocol.SimulateTransactionResponse, error)
	}
	ledgerEntrySource interface {
		// ledgerEntry returns a contract data, contract code or TTL entry as
		// of ledger at.
		ledgerEntry(key xdr.LedgerKey, at uint32) (data xdr.LedgerEntryData, lastModified uint32, liveUntil *uint32, ok bool)
	}
	adminRouter interface{ adminRoutes(mux *http.ServeMux) }
)

// rpcSimulateTransaction serves simulateTransaction through the host.
func (n *Network) rpcSimulateTransaction(_ *http.Request, params json.RawMessage) (any, error) {
	sim, ok := n.contracts.(simulator)
	if !ok {
		return nil, &RPCError{Code: rpcMethodNotFound, Message: "method not found: simulateTransaction"}
	}
	var req protocol.SimulateTransactionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	switch req.AuthMode {
	case "", protocol.AuthModeRecord, protocol.AuthModeEnforce, protocol.AuthModeRecordAllowNonroot:
	default:
		return nil, invalidParams("invalid authMode %q", req.AuthMode)
	}
	// The latest ledger is read before the host's lock (lock order: network, host).
	return sim.simulate(n.LatestLedger(), req)
}

// simulate evaluates the transaction's one Soroban operation against the
// next ledger, as stellar-rpc does, without changing anything.
func (h *VaultHost) simulate(latest LedgerInfo, req protocol.SimulateTransactionRequest) (protocol.SimulateTransactionResponse, error) {
	resp := protocol.SimulateTransactionResponse{LatestLedger: latest.Sequence}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(req.Transaction, &env); err != nil {
		return resp, invalidParams("Could not unmarshal transaction")
	}
	if env.IsFeeBump() {
		return resp, invalidParams("simulating a fee-bump transaction is not supported; simulate the inner transaction")
	}
	ops := env.Operations()
	if len(ops) != 1 || !isSorobanOp(ops[0]) {
		return resp, invalidParams("Transaction contains more than one operation or no Soroban operation")
	}
	op := ops[0]
	source := env.SourceAccount().ToAccountId().Address()
	if op.SourceAccount != nil {
		source = op.SourceAccount.ToAccountId().Address()
	}
	ledger := latest.Sequence + 1

	h.mu.Lock()
	defer h.mu.Unlock()
	switch op.Body.Type {
	case xdr.OperationTypeRestoreFootprint, xdr.OperationTypeExtendFootprintTtl:
		sd := sorobanData(env)
		if sd == nil {
			return resp, invalidParams("a RestoreFootprint or ExtendFootprintTtl transaction needs its footprint in the Soroban extension")
		}
		keys := sd.Resources.Footprint.ReadWrite
		if op.Body.Type == xdr.OperationTypeExtendFootprintTtl {
			keys = sd.Resources.Footprint.ReadOnly
		}
		archived, size, ok := h.restorePlanLocked(keys, ledger)
		if !ok {
			resp.Error = "HostError: Error(Storage, InvalidInput)\n\nonly persistent contract entries can be restored or extended"
			return resp, nil
		}
		res := xdr.SorobanResources{Footprint: sd.Resources.Footprint, DiskReadBytes: xdr.Uint32(size), WriteBytes: xdr.Uint32(size)}
		n := len(archived)
		if op.Body.Type == xdr.OperationTypeExtendFootprintTtl {
			n = len(keys) - len(archived)
			res.WriteBytes = 0
		}
		return resp, fillTransactionData(&resp, res, xdr.SorobanTransactionDataExt{}, resourceFee(res, n))
	}

	c, herr := h.parseLocked(op.Body.InvokeHostFunctionOp.HostFunction)
	if herr != nil {
		resp.Error = herr.simulationError(contractStrkey(op.Body.InvokeHostFunctionOp.HostFunction))
		return resp, nil
	}
	if c.fn != fnBalance && source != c.v.operator {
		// Recording would ask the operator for an address credential this
		// simulator does not model; only the operator as source is supported.
		resp.Error = systemError(xdr.ScErrorTypeSceAuth, xdr.ScErrorCodeScecInvalidAction, "the operation source must be the vault operator").simulationError(c.v.strkey)
		return resp, nil
	}
	x, herr := h.execLocked(c, ledger)
	if herr != nil {
		resp.Error = herr.simulationError(c.v.strkey)
		return resp, nil
	}
	ro, rw := h.footprint(c)
	leeway := uint64(0)
	if req.ResourceConfig != nil {
		leeway = req.ResourceConfig.InstructionLeeway
	}
	res := xdr.SorobanResources{
		Footprint:     xdr.LedgerFootprint{ReadOnly: ro, ReadWrite: rw},
		Instructions:  xdr.Uint32(min(uint64(x.instructions)+leeway, 1<<32-1)),
		DiskReadBytes: xdr.Uint32(x.readBytes),
		WriteBytes:    xdr.Uint32(x.writeBytes),
	}
	rent := x.rent
	var ext xdr.SorobanTransactionDataExt
	if len(x.archived) > 0 && !h.protocol22RestoreLocked() {
		// Protocol 23: no restorePreamble for an invocation
		// (stellar-rpc cmd/stellar-rpc/lib/preflight/src/shared.rs,
		// preflight_invoke_hf_op_post_autorestore_or_maybe_panic passes
		// none); the archived entries move to the read-write footprint,
		// are marked in archivedSorobanEntries, and the invocation
		// restores them, paying their rent and write.
		ext = h.autorestoreLocked(&res, x)
		rent += len(x.archived)
	}
	if err := fillTransactionData(&resp, res, ext, resourceFee(res, rent)); err != nil {
		return resp, err
	}
	auth := []string{}
	if c.fn != fnBalance {
		a, err := xdr.MarshalBase64(c.authEntry())
		if err != nil {
			return resp, err
		}
		auth = append(auth, a)
	}
	ret, err := xdr.MarshalBase64(x.ret)
	if err != nil {
		return resp, err
	}
	resp.Results = []protocol.SimulateHostFunctionResult{{AuthXDR: &auth, ReturnValueXDR: &ret}}
	if len(x.archived) > 0 && h.protocol22RestoreLocked() {
		var size uint32
		for _, k := range x.archived {
			size += entrySize(h.entries[keyString(k)])
		}
		rres := xdr.SorobanResources{Footprint: xdr.LedgerFootprint{ReadOnly: []xdr.LedgerKey{}, ReadWrite: x.archived},
			DiskReadBytes: xdr.Uint32(size), WriteBytes: xdr.Uint32(size)}
		fee := resourceFee(rres, len(x.archived))
		data, err := xdr.MarshalBase64(xdr.SorobanTransactionData{Resources: rres, ResourceFee: xdr.Int64(fee)})
		if err != nil {
			return resp, err
		}
		resp.RestorePreamble = &protocol.RestorePreamble{TransactionDataXDR: data, MinResourceFee: fee}
	}
	return resp, nil
}

func fillTransactionData(resp *protocol.SimulateTransactionResponse, res xdr.SorobanResources, ext xdr.SorobanTransactionDataExt, fee int64) error {
	if res.Footprint.ReadOnly == nil {
		res.Footprint.ReadOnly = []xdr.LedgerKey{}
	}
	if res.Footprint.ReadWrite == nil {
		res.Footprint.ReadWrite = []xdr.LedgerKey{}
	}
	data, err := xdr.MarshalBase64(xdr.SorobanTransactionData{Ext: ext, Resources: res, ResourceFee: xdr.Int64(fee)})
	if err != nil {
		return err
	}
	resp.TransactionDataXDR = data
	resp.MinResourceFee = fee
	return nil
}

// protocol22RestoreLocked reports whether the network runs the protocol 22
// restore flow. Callers hold h.mu (n.opts never changes after Start).
func (h *VaultHost) protocol22RestoreLocked() bool {
	return h.net != nil && h.net.opts.Protocol22Restore
}

// autorestoreLocked moves x's archived entries to the read-write footprint of
// res (keeping the order of the rest), counts their write, and returns the
// extension that marks them (SorobanResourcesExtV0.archivedSorobanEntries,
// indices into readWrite, ascending).
func (h *VaultHost) autorestoreLocked(res *xdr.SorobanResources, x execution) xdr.SorobanTransactionDataExt {
	fp := &res.Footprint
	var ro []xdr.LedgerKey
	for _, k := range fp.ReadOnly {
		if containsKey(x.archived, k) {
			fp.ReadWrite = append(fp.ReadWrite, k)
			continue
		}
		ro = append(ro, k)
	}
	fp.ReadOnly = ro
	var idx []xdr.Uint32
	for i, k := range fp.ReadWrite {
		if !containsKey(x.archived, k) {
			continue
		}
		idx = append(idx, xdr.Uint32(i))
		if x.write == nil || keyString(x.write.key) != keyString(k) {
			res.WriteBytes += xdr.Uint32(entrySize(h.entries[keyString(k)]))
		}
	}
	return xdr.SorobanTransactionDataExt{V: 1, ResourceExt: &xdr.SorobanResourcesExtV0{ArchivedSorobanEntries: idx}}
}

func contractStrkey(hf xdr.HostFunction) string {
	if hf.InvokeContract == nil {
		return ""
	}
	s, _ := hf.InvokeContract.ContractAddress.String()
	return s
}

// ledgerEntry serves contract data, contract code and TTL entries to
// getLedgerEntries, as of ledger at. Archived entries are still served, with
// their (past) liveUntilLedgerSeq.
func (h *VaultHost) ledgerEntry(key xdr.LedgerKey, at uint32) (xdr.LedgerEntryData, uint32, *uint32, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch key.Type {
	case xdr.LedgerEntryTypeContractData, xdr.LedgerEntryTypeContractCode:
		e := h.entryAtLocked(keyString(key), at)
		if e == nil {
			return xdr.LedgerEntryData{}, 0, nil, false
		}
		live := e.liveUntil
		return e.data, e.lastModified, &live, true
	case xdr.LedgerEntryTypeTtl:
		ks, ok := h.byTTLKey[key.Ttl.KeyHash]
		if !ok {
			return xdr.LedgerEntryData{}, 0, nil, false
		}
		e := h.entryAtLocked(ks, at)
		if e == nil {
			return xdr.LedgerEntryData{}, 0, nil, false
		}
		return xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeTtl, Ttl: &xdr.TtlEntry{KeyHash: key.Ttl.KeyHash,
			LiveUntilLedgerSeq: xdr.Uint32(e.liveUntil)}}, e.lastModified, nil, true
	}
	return xdr.LedgerEntryData{}, 0, nil, false
}

// adminRoutes adds, for tools outside Go:
//
//	GET  /_sim/vaults/{contract}/balances/{wallet}          the wallet's VaultBalance
//	POST /_sim/vaults/{contract}/balances/{wallet}/archive  archive its balance entry now
func (h *VaultHost) adminRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /_sim/vaults/{contract}/balances/{wallet}", func(w http.ResponseWriter, r *http.Request) {
		b, err := h.Balance(r.PathValue("contract"), r.PathValue("wallet"))
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
		writeJSON(w, http.StatusOK, b)
	})
	mux.HandleFunc("POST /_sim/vaults/{contract}/balances/{wallet}/archive", func(w http.ResponseWriter, r *http.Request) {
		if err := h.ArchiveBalance(r.PathValue("contract"), r.PathValue("wallet")); err != nil {
			adminError(w, http.StatusNotFound, err)
			return
		}
		b, _ := h.Balance(r.PathValue("contract"), r.PathValue("wallet"))
		writeJSON(w, http.StatusOK, b)
	})
}
