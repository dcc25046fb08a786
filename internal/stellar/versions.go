package stellar

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
)

// The stellar-rpc and Horizon releases this service supports, checked at start (CheckNetwork).
//
// stellar-rpc 23.0.0 and later. What the proofs read, by release (stellar-rpc
// cmd/stellar-rpc/internal/methods):
//   - getLatestLedger's closeTime exists from 25.0.0 (get_latest_ledger.go,
//     NewGetLatestLedgerHandler; stellar-rpc #554). Before, the close time of the ledger it names
//     is read with getLedgers (get_ledgers.go, from 22.1.0): rpcLatest.
//   - getTransaction reads the transaction, then the ledger range, from 25.1.0 (get_transaction.go,
//     GetTransaction; #619); before, the range first. The service's ledger fact is the
//     getLatestLedger read before the lookup began in both cases (RPCLedger.Lookup), so the order
//     does not matter to it (see rpcLatest).
//   - Releases before 23.0.0 predate protocol 23 (the Soroban flow without restorePreamble that
//     the contract mode relies on) and are not tested here: refused.
//
// Horizon 22.0.0 and later: POST /transactions_async (since 2.31.0) answering error_result_xdr
// (named so from 22.0.0; stellar-horizon CHANGELOG), which Send decodes. Earlier releases are
// refused. And a Horizon that can ingest the network's ledgers: its root's
// supported_protocol_version (the release's ingest.MaxSupportedProtocolVersion; from 22.0.0 the
// major release is that protocol) at least current_protocol_version (core's current ledger
// protocol: stellar-horizon internal/actions/root.go, internal/corestate/main.go). A release
// below the network's protocol stops ingesting at the upgrade (internal/ingest/
// processor_runner.go: "This Horizon version does not support protocol version ..."), so its
// history and its root's latest ledger stop: no envelope could be proven landed or dead on it.
// Refused (checkHorizonRoot). Pubnet runs protocol 26 since 2026-05-06, so it needs Horizon
// 26.0.0 or later.
var (
	MinRPCRelease     = Release{23, 0, 0}
	MinHorizonRelease = Release{22, 0, 0}
)

// ErrWrongNetwork is wrapped by CheckNetwork's error when the backend serves another network than
// the configured passphrase.
var ErrWrongNetwork = errors.New("stellar: the backend serves another network")

// Release is a semantic version, as stellar-rpc's getVersionInfo (version: "25.1.1", from its git
// tag) and Horizon's root (horizon_version: "23.0.0-<commit>") report it.
type Release struct{ Major, Minor, Patch int }

func (r Release) String() string { return fmt.Sprintf("%d.%d.%d", r.Major, r.Minor, r.Patch) }

// Less reports whether r is an earlier release than o.
func (r Release) Less(o Release) bool {
	if r.Major != o.Major {
		return r.Major < o.Major
	}
	if r.Minor != o.Minor {
		return r.Minor < o.Minor
	}
	return r.Patch < o.Patch
}

var releasePattern = regexp.MustCompile(`^(?:horizon-)?v?(\d{1,6})\.(\d{1,6})\.(\d{1,6})(?:[-+ ].*)?$`)

// ParseRelease reads "25.1.1", "v24.0.0", "23.0.0-1f8fba8" or "horizon-v2.32.0"; ok is false for
// anything else (a build without a release tag).
func ParseRelease(s string) (Release, bool) {
	m := releasePattern.FindStringSubmatch(s)
	if m == nil {
		return Release{}, false
	}
	var r Release
	r.Major, _ = strconv.Atoi(m[1])
	r.Minor, _ = strconv.Atoi(m[2])
	r.Patch, _ = strconv.Atoi(m[3])
	return r, true
}

// UnsupportedVersionError is CheckNetwork's error for a stellar-rpc or Horizon release the
// service does not support (or whose release it cannot read): the service must not start on it.
type UnsupportedVersionError struct {
	Backend  string // "stellar-rpc" or "Horizon"
	Reported string // the version string as the server reported it (clipped)
	Minimum  Release
	// Protocol, when set, is why a release at or after Minimum is refused: the ledger protocol the
	// network runs, above the highest one the release ingests (Supported).
	Protocol, Supported uint32
}

func (e *UnsupportedVersionError) Error() string {
	if e.Protocol != 0 {
		return fmt.Sprintf("stellar: %s %q ingests ledger protocols up to %d but the network runs protocol %d: it cannot ingest the network's ledgers; this service supports %s %d.0.0 and later on this network (README, \"Supported Stellar RPC and Horizon versions\")",
			e.Backend, e.Reported, e.Supported, e.Protocol, e.Backend, e.Protocol)
	}
	return fmt.Sprintf("stellar: %s reports version %q; this service supports %s %s and later (README, \"Supported Stellar RPC and Horizon versions\")",
		e.Backend, e.Reported, e.Backend, e.Minimum)
}

// checkHorizonRoot refuses a Horizon root whose release is before MinHorizonRelease or cannot be
// read, or whose supported_protocol_version is below current_protocol_version (see
// MinHorizonRelease). A root without supported_protocol_version (0) is judged on its release
// alone: the proofs stay sound on a Horizon that stopped ingesting (its latest ledger stops, so
// nothing is proven and items wait in doubt), the check only refuses what is known not to work.
func checkHorizonRoot(horizonVersion string, current, supported int32) error {
	if err := checkRelease("Horizon", horizonVersion, MinHorizonRelease); err != nil {
		return err
	}
	if supported > 0 && current > supported {
		if len(horizonVersion) > 64 {
			horizonVersion = horizonVersion[:64]
		}
		return &UnsupportedVersionError{Backend: "Horizon", Reported: horizonVersion, Minimum: MinHorizonRelease,
			Protocol: uint32(current), Supported: uint32(supported)}
	}
	return nil
}

// checkRelease refuses reported when it is not a release at or after minimum.
func checkRelease(backend, reported string, minimum Release) error {
	r, ok := ParseRelease(reported)
	if !ok || r.Less(minimum) {
		if len(reported) > 64 {
			reported = reported[:64]
		}
		return &UnsupportedVersionError{Backend: backend, Reported: reported, Minimum: minimum}
	}
	return nil
}

// checkVersion reads getVersionInfo and refuses a release before MinRPCRelease.
func (l *RPCLedger) checkVersion(ctx context.Context) error {
	v, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetVersionInfoResponse, error) {
		return c.GetVersionInfo(ctx)
	})
	if jrpc2.ErrorCode(err) == jrpc2.MethodNotFound {
		// An answer, not an outage: the server has no getVersionInfo, so it is a soroban-rpc
		// before 21.1.0 (its CHANGELOG, stellar/soroban-rpc #132), which has no getLedgers either
		// and so can never give the close time the death proof needs. Refused as a release that
		// cannot be read, so that Init.CheckBackend ends the init instead of warning.
		return &UnsupportedVersionError{Backend: "stellar-rpc", Reported: "(no getVersionInfo method)", Minimum: MinRPCRelease}
	}
	if err != nil {
		return fmt.Errorf("stellar: getVersionInfo: %w", err)
	}
	return checkRelease("stellar-rpc", v.Version, MinRPCRelease)
}

// ledgerCloseTimes remembers the close time of the last ledger whose close time had to be read
// with getLedgers. A ledger's close time is its header's scpValue.closeTime, agreed by consensus:
// the same on every RPC instance and for ever, so it may be kept.
type ledgerCloseTimes struct {
	mu  sync.Mutex
	seq uint32
	at  time.Time
}

// rpcLatest reads getLatestLedger: the latest ledger this RPC has ingested and its close time.
// stellar-rpc reports closeTime from 25.0.0 on; before, it is read here with getLedgers
// (startLedger = that sequence, one ledger: its ledgerCloseTime, the header's
// scpValue.closeTime), once per ledger. The ledger fact the death proof needs is then as sound
// as with closeTime: which ledger is the one getLatestLedger named, read before the lookup
// began (RPCLedger.Lookup); getLedgers only adds a property of that ledger that never changes,
// whenever and from whichever instance it is read.
//
// On the read order of the releases without closeTime (before 25.1.0, getTransaction read the
// ledger range before the transaction, the range from the latest-ledger cache that the ingestion
// updates only after its database commit): the latestLedger of a NOT_FOUND answer was then
// covered by that search too, so either ledger could be trusted on one instance. Lookup still
// takes the getLatestLedger read before, never the answer's own, so it stays sound when the
// deployment is upgraded past 25.1.0 while it runs (the release was read once, at start).
//
// When getLedgers fails or does not name that ledger (an instance that trails the one that
// answered getLatestLedger), the close time is zero: nothing is proven on it, the next read tries
// again.
func (l *RPCLedger) rpcLatest(ctx context.Context) (uint32, time.Time, error) {
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("stellar: getLatestLedger: %w", err)
	}
	if resp.Sequence == 0 {
		return 0, time.Time{}, fmt.Errorf("stellar: getLatestLedger returned ledger 0")
	}
	l.reserve.observeHeader(resp.LedgerHeader, l.clock.Now())
	if resp.LedgerCloseTime > 0 {
		return resp.Sequence, closeTime(resp.LedgerCloseTime), nil
	}
	return resp.Sequence, l.closeTimeOf(ctx, resp.Sequence), nil
}

// closeTimeOf is ledger seq's close time from getLedgers, or zero (see rpcLatest).
func (l *RPCLedger) closeTimeOf(ctx context.Context, seq uint32) time.Time {
	c := &l.closeTimes
	c.mu.Lock()
	if c.seq == seq {
		at := c.at
		c.mu.Unlock()
		return at
	}
	c.mu.Unlock()
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgersResponse, error) {
		return c.GetLedgers(ctx, protocol.GetLedgersRequest{StartLedger: seq, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	})
	if err != nil || len(resp.Ledgers) == 0 || resp.Ledgers[0].Sequence != seq || resp.Ledgers[0].LedgerCloseTime <= 0 {
		return time.Time{}
	}
	at := closeTime(resp.Ledgers[0].LedgerCloseTime)
	c.mu.Lock()
	if seq > c.seq {
		c.seq, c.at = seq, at
	}
	c.mu.Unlock()
	return at
}
