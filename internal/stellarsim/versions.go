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
const coreVersionString = "stellar-core 26.1.0 (stellarsim)"

// HorizonVersion names a Horizon release profile: what the root (GET /) reports as
// horizon_version and supported_protocol_version. Since 22.0.0 stellar-horizon's major release is
// the highest ledger protocol it ingests (CHANGELOG: "This release adds support for Protocol N";
// internal/ingest/main.go, MaxSupportedProtocolVersion: 25 in v25.0.0 ... 28 in v28.0.0). A
// release below the network's protocol cannot ingest its ledgers (internal/ingest/
// processor_runner.go: "This Horizon version does not support protocol version ..."), and its
// root says so: current_protocol_version (core's) above supported_protocol_version. The rest of
// Horizon's answers are the same under every profile here: what the service reads of them
// (/transactions_async with error_result_xdr, /transactions/{hash} by inner or outer hash, the
// root's ledger) has the same shape from 22.0.0 on, and the halted ingestion of a release below
// the network's protocol is not modelled (its root is).
type HorizonVersion string

// The Horizon profiles.
const (
	// HorizonCurrent is stellar-horizon 28.0.0 (protocols up to 28): the default.
	HorizonCurrent HorizonVersion = "current"
	// HorizonV27 is 27.0.1 (protocols up to 27).
	HorizonV27 HorizonVersion = "v27"
	// HorizonV26 is 26.0.0, the first release that ingests protocol 26 (CAP-73, CAP-77).
	HorizonV26 HorizonVersion = "v26"
	// HorizonV25 is 25.1.0: it cannot ingest this network's protocol 26 ledgers.
	HorizonV25 HorizonVersion = "v25"
	// HorizonV22 is 22.0.3, the first release whose /transactions_async answers
	// error_result_xdr; protocols up to 22.
	HorizonV22 HorizonVersion = "v22"
)

// HorizonVersions lists the profiles, the default first.
var HorizonVersions = []HorizonVersion{HorizonCurrent, HorizonV27, HorizonV26, HorizonV25, HorizonV22}

// horizonReleases is each profile's release and the highest protocol it ingests.
var horizonReleases = map[HorizonVersion]struct {
	release   string
	protocols uint32
}{
	HorizonCurrent: {"28.0.0", 28},
	HorizonV27:     {"27.0.1", 27},
	HorizonV26:     {"26.0.0", 26},
	HorizonV25:     {"25.1.0", 25},
	HorizonV22:     {"22.0.3", 22},
}

func (v HorizonVersion) orCurrent() HorizonVersion {
	if v == "" {
		return HorizonCurrent
	}
	return v
}

func (v HorizonVersion) valid() bool { return v == "" || slices.Contains(HorizonVersions, v) }

// Release is the stellar-horizon release the profile reports.
func (v HorizonVersion) Release() string { return horizonReleases[v.orCurrent()].release }

// versionString is the root's horizon_version in Horizon's shape ("X.Y.Z-commit").
func (v HorizonVersion) versionString() string { return v.Release() + "-stellarsim" }

// supportedProtocol is the root's supported_protocol_version.
func (v HorizonVersion) supportedProtocol() uint32 {
	return horizonReleases[v.orCurrent()].protocols
}

// SetHorizonVersion switches the Horizon profile the root answers with from the next request on.
// An unknown name is an error and changes nothing.
func (n *Network) SetHorizonVersion(v HorizonVersion) error {
	if !v.valid() {
		return fmt.Errorf("stellarsim: unknown Horizon profile %q (want one of %v)", v, HorizonVersions)
	}
	n.mu.Lock()
	n.horizonVer = v.orCurrent()
	n.mu.Unlock()
	return nil
}

// HorizonVersion is the Horizon profile the root answers with.
func (n *Network) HorizonVersion() HorizonVersion {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.horizonVer
}

// horizonVersionJSON is GET and PUT /_sim/horizon_version's body.
type horizonVersionJSON struct {
	Profile  HorizonVersion   `json:"horizon_version"`
	Release  string           `json:"release,omitempty"`
	Profiles []HorizonVersion `json:"profiles,omitempty"`
}

func (n *Network) adminHorizonVersion(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut {
		var req horizonVersionJSON
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<10))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		if err == nil && req.Profile == "" {
			err = fmt.Errorf(`want {"horizon_version": one of %v}`, HorizonVersions)
		}
		if err == nil {
			err = n.SetHorizonVersion(req.Profile)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
	}
	v := n.HorizonVersion()
	writeJSON(w, http.StatusOK, horizonVersionJSON{Profile: v, Release: v.Release(), Profiles: HorizonVersions})
}

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
