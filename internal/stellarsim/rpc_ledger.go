package stellarsim

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Stellar RPC methods that read the ledger: getHealth, getNetwork, getLatestLedger, getLedgerEntries,
// getFeeStats.

func (n *Network) rpcGetHealth(r *http.Request, _ json.RawMessage) (any, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	view := n.viewOf(r, "rpc")
	latest := n.ledgerInfo(view.latest)
	oldest := n.oldestAt(view.latest)
	return protocol.GetHealthResponse{
		Status:                "healthy",
		LatestLedger:          latest.Sequence,
		LatestLedgerCloseTime: latest.CloseTime.Unix(),
		OldestLedger:          oldest,
		OldestLedgerCloseTime: n.closeTimeOf(oldest),
		LedgerRetentionWindow: n.retention,
	}, nil
}

// rpcGetNetwork follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_network.go,
// NewGetNetworkHandler); its friendbotUrl is the configured one there, here the friendbot of the
// address the client reached (requestBase).
func (n *Network) rpcGetNetwork(r *http.Request, _ json.RawMessage) (any, error) {
	return protocol.GetNetworkResponse{
		FriendbotURL:    n.requestBase(r) + "/friendbot/",
		Passphrase:      n.passphrase,
		ProtocolVersion: protocolVersion,
	}, nil
}

// getLatestLedgerV24 is getLatestLedger's answer before stellar-rpc v25.0.0
// (v24.0.0 get_latest_ledger.go: id, protocolVersion and sequence; no close
// time, header or meta).
type getLatestLedgerV24 struct {
	Hash            string `json:"id"`
	ProtocolVersion uint32 `json:"protocolVersion"`
	Sequence        uint32 `json:"sequence"`
}

// rpcGetLatestLedger follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_latest_ledger.go,
// NewGetLatestLedgerHandler): headerXdr is the bare LedgerHeader (not the history entry that
// getLedgers sends) and metadataXdr the ledger's LedgerCloseMeta. The ledger is the one the
// answering instance shows (viewOf: visibility lag and read faults). Under the v23 and v24
// profiles the answer has no closeTime, headerXdr or metadataXdr (versions.go).
func (n *Network) rpcGetLatestLedger(r *http.Request, _ json.RawMessage) (any, error) {
	n.mu.Lock()
	latest := n.ledgerInfo(n.viewOf(r, "rpc").latest)
	if !n.rpcVersion.latestHasCloseTime() {
		hdr := n.ledgerHeaderLocked(latest.Sequence)
		n.mu.Unlock()
		return getLatestLedgerV24{Hash: hex.EncodeToString(hdr.Hash[:]), ProtocolVersion: protocolVersion, Sequence: latest.Sequence}, nil
	}
	hdr := n.ledgerHeaderLocked(latest.Sequence)
	metaXDR, err := n.closeMetaXDRLocked(latest.Sequence)
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	hdrXDR, err := xdr.MarshalBase64(hdr.Header)
	if err != nil {
		return nil, fmt.Errorf("encoding ledger header: %w", err)
	}
	return protocol.GetLatestLedgerResponse{
		Hash:            hex.EncodeToString(hdr.Hash[:]),
		ProtocolVersion: protocolVersion,
		Sequence:        latest.Sequence,
		LedgerCloseTime: latest.CloseTime.Unix(),
		LedgerHeader:    hdrXDR,
		LedgerMetadata:  metaXDR,
	}, nil
}

func (n *Network) rpcGetLedgerEntries(r *http.Request, params json.RawMessage) (any, error) {
	var req protocol.GetLedgerEntriesRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if len(req.Keys) == 0 || len(req.Keys) > 200 {
		return nil, invalidParams("keys: want 1 to 200 keys, got %d", len(req.Keys))
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	keys := make([]xdr.LedgerKey, len(req.Keys))
	for i, k := range req.Keys {
		if err := xdr.SafeUnmarshalBase64(k, &keys[i]); err != nil {
			return nil, invalidParams("cannot unmarshal key value %s at index %d", k, i)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	at := n.viewOf(r, "rpc").entries // entries as of the ledger the instance reads at
	resp := protocol.GetLedgerEntriesResponse{Entries: []protocol.LedgerEntryResult{}, LatestLedger: at}
	for i, k := range keys {
		var data xdr.LedgerEntryData
		var modified uint32
		var liveUntil *uint32 // contract entries only
		var err error
		switch k.Type {
		case xdr.LedgerEntryTypeAccount:
			a := n.accountAt(k.Account.AccountId.Address(), at)
			if a == nil {
				continue
			}
			data, err = a.entryXDR()
			modified = a.lastModified
		case xdr.LedgerEntryTypeTrustline:
			var typ xdr.AssetType
			var code, issuer string
			if k.TrustLine.Asset.Extract(&typ, &code, &issuer) != nil || typ == xdr.AssetTypeAssetTypeNative ||
				typ == xdr.AssetTypeAssetTypePoolShare {
				continue
			}
			id := k.TrustLine.AccountId.Address()
			asset := Asset{Code: code, Issuer: issuer}
			t := n.trustlineAt(tlKey{id, asset}, at)
			if t == nil {
				continue
			}
			data, err = t.entryXDR(id, asset)
			modified = t.lastModified
		case xdr.LedgerEntryTypeContractData, xdr.LedgerEntryTypeContractCode, xdr.LedgerEntryTypeTtl:
			src, ok := n.contracts.(ledgerEntrySource)
			if !ok {
				continue
			}
			var found bool
			if data, modified, liveUntil, found = src.ledgerEntry(k, at); !found {
				continue
			}
		default:
			continue // other entry types do not exist here
		}
		if err != nil {
			return nil, fmt.Errorf("encoding entry: %w", err)
		}
		b, err := xdr.MarshalBase64(data)
		if err != nil {
			return nil, fmt.Errorf("encoding entry: %w", err)
		}
		resp.Entries = append(resp.Entries, protocol.LedgerEntryResult{KeyXDR: req.Keys[i], DataXDR: b, LastModifiedLedger: modified,
			LiveUntilLedgerSeq: liveUntil})
	}
	return resp, nil
}
