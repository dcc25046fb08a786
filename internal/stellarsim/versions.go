package stellarsim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
)

// This file names the software versions the network plays: the stellar-core
// it models, the Horizon in front of it, and the stellar-rpc release whose
// answers RPC gives (Options.RPCVersion, PUT /_sim/rpc_version).

// RPCVersion names a stellar-rpc behaviour profile. The profiles differ in the
// two answers the death proof reads (cmd/stellar-rpc/internal/methods):
//
//   - get_latest_ledger.go, NewGetLatestLedgerHandler: closeTime (with
//     headerXdr and metadataXdr) from v25.0.0 (stellar-rpc #554); v23 and v24
//     answer id, protocolVersion and sequence only.
//   - get_transaction.go, GetTransaction: from v25.1.0 (stellar-rpc #619) it
//     reads the transaction, then the ledger range, so during ingestion a
//     NOT_FOUND can carry a latestLedger holding the transaction (the
//     read_order fault). Before, it read the range first (from the latest
//     ledger cache, which db.go's writeTx.Commit updates only after the
//     database commit), so a NOT_FOUND's latestLedger was always searched, and
//     the race showed the other way: a transaction found in a ledger above the
//     answer's latestLedger (what the read_order fault does under these
//     profiles).
type RPCVersion string

// The stellar-rpc profiles.
const (
	// RPCCurrent is stellar-rpc v25.1.0 and later (read up to v27.1.1): the default.
	RPCCurrent RPCVersion = "current"
	// RPCv25_0 is v25.0.x: closeTime in getLatestLedger, the range read first.
	RPCv25_0 RPCVersion = "v25.0"
	// RPCv24 is v24.0.0: no closeTime, the range read first.
	RPCv24 RPCVersion = "v24"
	// RPCv23 is v23.0.x: as v24 for what is modelled here.
	RPCv23 RPCVersion = "v23"
)

// RPCVersions lists the profiles, the default first.
var RPCVersions = []RPCVersion{RPCCurrent, RPCv25_0, RPCv24, RPCv23}

// rpcReleases is what getVersionInfo reports as version for each profile:
// the release whose code the profile follows, in stellar-rpc's spelling (its
// Makefile sets config.Version from the git tag without the "v").
var rpcReleases = map[RPCVersion]string{
	RPCCurrent: "27.1.1",
	RPCv25_0:   "25.0.1",
	RPCv24:     "24.0.0",
	RPCv23:     "23.0.4",
}

// Versions of the rest of the network, reported by getVersionInfo's
// captiveCoreVersion and Horizon's root (core_version, horizon_version) in
// their real shapes: "stellar-core X.Y.Z (commit)" and Horizon's
// "X.Y.Z-commit". The ledger protocol is protocolVersion (rpc.go); the core
// release is the one whose ledger shapes this network produces (doc.go).
const (
	coreVersionString    = "stellar-core 23.0.1 (stellarsim)"
	horizonVersionString = "28.0.0-stellarsim"
)

// Release is the stellar-rpc release a profile reports (getVersionInfo's version).
func (v RPCVersion) Release() string { return rpcReleases[v.orCurrent()] }

func (v RPCVersion) orCurrent() RPCVersion {
	if v == "" {
		return RPCCurrent
	}
	return v
}

// valid reports whether v names a profile ("" is the default).
func (v RPCVersion) valid() bool { return v == "" || slices.Contains(RPCVersions, v) }

// latestHasCloseTime: getLatestLedger reports closeTime, headerXdr and metadataXdr (v25.0.0+).
func (v RPCVersion) latestHasCloseTime() bool {
	v = v.orCurrent()
	return v == RPCCurrent || v == RPCv25_0
}

// rangeReadFirst: getTransaction reads the ledger range before the transaction (before v25.1.0).
func (v RPCVersion) rangeReadFirst() bool { return v.orCurrent() != RPCCurrent }

// SetRPCVersion switches the stellar-rpc profile RPC answers with from the
// next request on. An unknown name is an error and changes nothing.
func (n *Network) SetRPCVersion(v RPCVersion) error {
	if !v.valid() {
		return fmt.Errorf("stellarsim: unknown stellar-rpc profile %q (want one of %v)", v, RPCVersions)
	}
	n.mu.Lock()
	n.rpcVersion = v.orCurrent()
	n.mu.Unlock()
	return nil
}

// RPCVersion is the stellar-rpc profile RPC answers with.
func (n *Network) RPCVersion() RPCVersion {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rpcVersion
}

// rpcVersionJSON is GET and PUT /_sim/rpc_version's body.
type rpcVersionJSON struct {
	Profile  RPCVersion   `json:"rpc_version"`
	Release  string       `json:"release,omitempty"`
	Profiles []RPCVersion `json:"profiles,omitempty"`
}

func (n *Network) adminRPCVersion(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut || r.Method == http.MethodPost {
		var req rpcVersionJSON
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<10))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err == nil && req.Profile == "" {
			err = fmt.Errorf(`want {"rpc_version": one of %v}`, RPCVersions)
		}
		if err == nil {
			err = n.SetRPCVersion(req.Profile)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
	}
	v := n.RPCVersion()
	writeJSON(w, http.StatusOK, rpcVersionJSON{Profile: v, Release: v.Release(), Profiles: RPCVersions})
}
