// Package reconcile is the operators' side of in-doubt transfers (README.md, "Operating it") and the
// reconcile function's handler (functions/reconcile): list and get the in-doubt queue with what
// the chain says now; resolve an item with a transaction hash that the ledger shows landed, or
// discard one that the ledger proves dead (either forced, with a reason, when the ledger cannot
// prove it); sweep: settle every in-doubt item and expired claim the ledger can judge; and daily:
// a UTC day's transfers set against the chain and the vault's balance (daily.go), stored and read
// again with report. Judgement is transfer.Orchestrator.Settle's, the same rules every other path
// uses.
//
// A read-only Service (Config.ReadOnly) answers list, get and report only and refuses every action
// that writes (resolve, sweep, channels, daily) with the Problem ACTION_NOT_ALLOWED before reading
// anything.
// The same binary serves both operator roles of README.md ("Operator roles"): ReconcileFunction
// with every action, and InDoubtReaderFunction read-only (RECONCILE_ACTIONS=read), whose IAM
// role can only read the table, so lambda:InvokeFunction on it grants exactly list, get and report.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Store is the part of the transfer store reconcile uses (dynamo.Store).
type Store interface {
	Get(ctx context.Context, storeKey string) (transfer.Record, error)
	Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error
	Delete(ctx context.Context, storeKey string, cond transfer.Condition) error
	ListInDoubt(ctx context.Context, limit int, cursor string) ([]transfer.Record, string, error)
	ListExpiredClaims(ctx context.Context, now time.Time, limit int, cursor string) ([]transfer.Record, string, error)
}

// Settler judges an in_doubt item or an expired claim from the ledger (transfer.Orchestrator).
type Settler interface {
	Settle(ctx context.Context, rec transfer.Record) (transfer.Settlement, error)
}

// Ledger looks envelopes up and releases their source account (transfer.Ledger).
type Ledger interface {
	Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error)
	Done(ctx context.Context, env transfer.Envelope)
}

// Gauge publishes the in-doubt gauge (metrics.Writer).
type Gauge interface {
	InDoubtGauge(ctx context.Context, n int)
}

// Config assembles a Service; all fields but Logger are required.
type Config struct {
	Store   Store
	Settler Settler
	Ledger  Ledger
	Gauge   Gauge
	Clock   transfer.Clock
	// KeyTTL is how long a resolved item is replayed (IDEMPOTENCY_KEY_TTL_MS), read per call.
	KeyTTL func() time.Duration
	// Channels lists the channel accounts and creates the missing ones on chain (the ledger's
	// EnsureChannels); nil when the function has no signing keys or no channels are configured.
	Channels func(ctx context.Context) (any, error)
	// ReadOnly: answer list, get and report only (InDoubtReaderFunction, RECONCILE_ACTIONS=read); resolve,
	// sweep, channels and daily are refused with CodeActionNotAllowed, nothing read or written. Settler,
	// Gauge, Channels and Watch are then never called.
	ReadOnly bool
	// Watch, when set, runs at the start of every sweep, within WatchTimeout: it writes the
	// gauges of what the schedule watches besides the in-doubt queue (the balances, the channel
	// leases in use: wiring.Watch) and logs its own failures. It runs first so that a sweep that
	// fails or runs out of time still reports them.
	Watch  func(ctx context.Context)
	Logger *slog.Logger
	// Queue and Queued, both set, let the sweep run async transfers (README.md, "Asynchronous
	// transfers"): it sends the message again for every queued item queued more than QueuedGrace
	// ago (its message never sent, lost, or dead-lettered) and for every async item it requeues.
	// Queued alone (QUEUE_URL empty): queued items are left alone, but those queued more than
	// QueuedGrace ago are stranded (nothing will ever send them), so the sweep counts them
	// (QueuedCounts.Stranded), logs the count at ERROR and writes it to Stranded. Queued nil:
	// queued items are not read at all.
	Queue  transfer.Queue
	Queued QueuedLister
	// Stranded, optional, receives a sweep's count of stranded queued items when it found some
	// (metrics.Writer: transfer_orchestration_queued_stranded).
	Stranded StrandedGauge
	// QueuedGrace is how long a queued item waits for its own message before the sweep sends it
	// again; 0 means DefaultQueuedGrace.
	QueuedGrace time.Duration
	// Daily, when set, runs the daily reconciliation (daily.go) and reads its stored reports;
	// nil refuses daily and report with DAILY_NOT_SUPPORTED.
	Daily *Daily
}

// QueuedLister lists queued items queued before a time (dynamo.Store.ListQueued).
type QueuedLister interface {
	ListQueued(ctx context.Context, before time.Time, limit int, cursor string) ([]transfer.Record, string, error)
}

// StrandedGauge publishes the count of queued items the sweep cannot send (metrics.Writer).
type StrandedGauge interface {
	QueuedStrandedGauge(ctx context.Context, n int)
}

// DefaultQueuedGrace is Config.QueuedGrace's default: ten minutes, longer than the queue's
// visibility timeout (template.yaml's TransferQueue: 360 s), so a requeued item's own message is
// delivered again before the sweep sends another (a duplicate does nothing but cost a read:
// transfer.RunQueued).
const DefaultQueuedGrace = 10 * time.Minute

// WatchTimeout bounds Config.Watch in each sweep.
const WatchTimeout = 10 * time.Second

// ChannelsAnswer is channels' answer: every configured channel account and whether this call
// created it.
type ChannelsAnswer struct {
	Action   string `json:"action"`
	Channels any    `json:"channels"`
}

// Service runs the operator actions.
type Service struct {
	cfg Config
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Service{cfg: cfg}
}

// Actions.
const (
	ActionList     = "list"
	ActionGet      = "get"
	ActionResolve  = "resolve"
	ActionSweep    = "sweep"
	ActionChannels = "channels"
)

// Request is the payload of every action: {"action": ..., and the action's fields}.
type Request struct {
	Action string `json:"action"`
	// list: page size (default 20, at most 100) and the cursor of the previous page.
	Limit  int    `json:"limit,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	// get, resolve: the item's store key ("transfer:<16 hex>:<clientKey>").
	StoreKey string `json:"storeKey,omitempty"`
	// resolve: a hex transaction hash, or discard; force (with a reason) when the ledger cannot
	// prove it; operator says who asks (recorded with the Lambda request ID).
	TransactionHash string `json:"transactionHash,omitempty"`
	Discard         bool   `json:"discard,omitempty"`
	// InnerHash names the envelope the operator checked (get's innerHash): required for a forced
	// discard of an item holding an envelope, and compared whenever given, so a discard can never
	// apply to a later envelope or incarnation of the key that nobody checked.
	InnerHash string `json:"innerHash,omitempty"`
	Force     bool   `json:"force,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Operator  string `json:"operator,omitempty"`
	// daily, report: the UTC day, YYYY-MM-DD; empty is the day before the invocation's
	// (daily.go).
	Day string `json:"day,omitempty"`
	// daily: report a day not over yet up to the latest ledger (its day defaults to today's):
	// answered and logged only, neither stored nor counted nor published (daily.go).
	SoFar bool `json:"soFar,omitempty"`
}

// Page sizes of list.
const (
	DefaultListLimit = 20
	MaxListLimit     = 100
)

// Limits on what an operator's fields may hold (they are stored on the item and logged).
const (
	maxOperatorLen = 128
	maxReasonLen   = 1000
)

// ListAnswer is list's answer: one page of the in-doubt queue, oldest first, and the cursor of
// the next page ("" at the end).
type ListAnswer struct {
	Action string `json:"action"`
	Items  []Item `json:"items"`
	Cursor string `json:"cursor,omitempty"`
}

// GetAnswer is get's answer.
type GetAnswer struct {
	Action string `json:"action"`
	Item   Item   `json:"item"`
}

// ResolveAnswer is resolve's answer: what the item became ("replayable" or "released"), the
// landed transaction for a resolution, and whether the operator forced it.
type ResolveAnswer struct {
	Action          string `json:"action"`
	StoreKey        string `json:"storeKey"`
	Resolution      string `json:"resolution"`
	TransactionHash string `json:"transactionHash,omitempty"`
	// OperationIndex is the key's operation (0-based) in that transaction when it is the key's
	// batch's (transfer.OperationIndexOf).
	OperationIndex *int   `json:"operationIndex,omitempty"`
	Ledger         uint32 `json:"ledger,omitempty"`
	Forced         bool   `json:"forced"`
}

// Do runs one action. Errors are *Error.
func (s *Service) Do(ctx context.Context, req Request) (any, error) {
	if s.cfg.ReadOnly && writes(req.Action) {
		return nil, refuse(CodeActionNotAllowed, "this function is read-only (list, get and report); %s is an operator's action: invoke the reconcile function (ReconcileFunction) with the operator role",
			req.Action)
	}
	switch req.Action {
	case ActionList:
		return s.list(ctx, req)
	case ActionGet:
		return s.get(ctx, req)
	case ActionResolve:
		return s.resolve(ctx, req)
	case ActionSweep:
		return s.Sweep(ctx)
	case ActionDaily:
		return s.daily(ctx, req)
	case ActionReport:
		return s.storedReport(ctx, req)
	case ActionChannels:
		if s.cfg.Channels == nil {
			return nil, refuse(CodeChannelsNotAvailable, "no channel accounts here: CHANNEL_COUNT is 0 or the function has no SIGNING_SECRET_ARN")
		}
		chans, err := s.cfg.Channels(ctx)
		if err != nil {
			return nil, &Error{Code: CodeChannelsFailed, Message: "listing or creating the channel accounts failed; see the function's log", Err: err}
		}
		return &ChannelsAnswer{Action: ActionChannels, Channels: chans}, nil
	case "":
		return nil, badRequest("action is required (list, get, resolve, sweep, channels, daily, report)")
	default:
		return nil, refuse(CodeUnknownAction, "unknown action %q (list, get, resolve, sweep, channels, daily, report)", logging.Clip(req.Action, 32))
	}
}

// writes reports whether action is one a read-only service refuses: every known action but list,
// get and report (a stored daily report). Unknown actions stay UNKNOWN_ACTION, as on the full
// service.
func writes(action string) bool {
	return action == ActionResolve || action == ActionSweep || action == ActionChannels || action == ActionDaily
}

func (s *Service) list(ctx context.Context, req Request) (*ListAnswer, error) {
	limit := req.Limit
	switch {
	case limit < 0 || limit > MaxListLimit:
		return nil, badRequest("limit must be 1 to %d", MaxListLimit)
	case limit == 0:
		limit = DefaultListLimit
	}
	recs, next, err := s.cfg.Store.ListInDoubt(ctx, limit, req.Cursor)
	if err != nil {
		if errors.Is(err, transfer.ErrBadCursor) {
			return nil, badRequest("cursor is not one this function returned")
		}
		return nil, storeErr(err)
	}
	out := &ListAnswer{Action: ActionList, Items: make([]Item, 0, len(recs)), Cursor: next}
	for _, rec := range recs {
		out.Items = append(out.Items, s.view(ctx, rec))
	}
	return out, nil
}

func (s *Service) get(ctx context.Context, req Request) (*GetAnswer, error) {
	rec, err := s.read(ctx, req.StoreKey)
	if err != nil {
		return nil, err
	}
	return &GetAnswer{Action: ActionGet, Item: s.view(ctx, rec)}, nil
}

// view is rec's Item with the chain's answer; a failed lookup is shown, not fatal.
func (s *Service) view(ctx context.Context, rec transfer.Record) Item {
	it := itemOf(rec)
	if rec.Envelope == nil {
		return it
	}
	env := *rec.Envelope
	if rec.Batch != nil {
		// A batched key's item holds its batch's hashes but not the signed XDR, which the batch
		// item holds (transfer/doc.go, "Batches"): looked up from the item alone, the ledger
		// cannot read the envelope's source and sequence number, and the view would say "not
		// proven dead" of a batch that a discard (Settle, from the batch item) proves dead.
		// A batch item that cannot be read leaves the item's hashes, which the ledger still finds.
		if b, err := transfer.BatchOf(ctx, s.cfg.Store, rec); err == nil {
			env = b.Envelope
		} else {
			s.cfg.Logger.WarnContext(ctx, "reading a batched key's batch failed; looking its hashes up alone", "storeKey", rec.StoreKey, "err", err)
		}
	}
	lk, err := s.cfg.Ledger.Lookup(ctx, env)
	if err != nil {
		s.cfg.Logger.WarnContext(ctx, "ledger lookup failed", "storeKey", rec.StoreKey, "err", err)
		it.Chain = &Chain{Error: "the Stellar ledger could not be asked"}
		return it
	}
	it.Chain = chainOf(env, lk)
	return it
}

func (s *Service) read(ctx context.Context, key string) (transfer.Record, error) {
	// The store key's whole form, up to the longest key the configuration can allow
	// (transfer.MaxKeyLengthBound), so every stored transfer can be read and nothing else is asked.
	if !transfer.ValidStoreKey(key) {
		return transfer.Record{}, badRequest("storeKey must be a transfer's store key (transfer:<16 hex>:<idempotency key of %d to %d characters>)",
			transfer.MinKeyLength, transfer.MaxKeyLengthBound)
	}
	rec, err := s.cfg.Store.Get(ctx, key)
	if errors.Is(err, transfer.ErrNotFound) {
		return transfer.Record{}, refuse(CodeNotFound, "no transfer is stored under %s", key)
	}
	if err != nil {
		return transfer.Record{}, storeErr(err)
	}
	return rec, nil
}

func (s *Service) resolve(ctx context.Context, req Request) (*ResolveAnswer, error) {
	switch {
	case req.Discard == (req.TransactionHash != ""):
		return nil, badRequest("resolve takes exactly one of transactionHash and discard: true")
	case strings.TrimSpace(req.Operator) == "" || len(req.Operator) > maxOperatorLen:
		return nil, badRequest("operator (who is asking, 1 to %d characters) is required", maxOperatorLen)
	case req.Force && strings.TrimSpace(req.Reason) == "":
		return nil, badRequest("force requires a reason")
	case len(req.Reason) > maxReasonLen:
		return nil, badRequest("reason is limited to %d characters", maxReasonLen)
	case logging.ContainsSeed(req.Operator) || logging.ContainsSeed(req.Reason):
		// Both are written into the item's audit, logged and sent with the stream's record.
		return nil, refuse(CodeSecretInPayload, "operator or reason holds a Stellar secret seed; never paste secrets, and rotate that key")
	}
	rec, err := s.read(ctx, req.StoreKey)
	if err != nil {
		return nil, err
	}
	if rec.Status != transfer.StatusInDoubt {
		return nil, refuse(CodeNotInDoubt, "the transfer is %s, not in_doubt: nothing to resolve", rec.Status)
	}
	if h := strings.ToLower(strings.TrimSpace(req.InnerHash)); rec.Envelope != nil && (h != "" || req.Discard && req.Force) {
		switch {
		case h == "":
			return nil, badRequest("a forced discard names the envelope it checked: innerHash (from get)")
		case h != rec.Envelope.InnerHash:
			return nil, refuse(CodeHashMismatch, "innerHash %s is not this transfer's current envelope (%s): the item changed since it was checked; get it again",
				logging.Clip(h, 64), rec.Envelope.InnerHash)
		}
	}
	if rec.Envelope == nil {
		// Every in_doubt item the orchestrator writes holds its envelope; one without cannot be
		// judged from the ledger, so only a forced discard can release it.
		if req.Discard && req.Force {
			return s.forceDiscard(ctx, req, rec)
		}
		return nil, refuse(CodeNotProvenDead, "the item holds no envelope to look up; only a forced discard can release it")
	}
	if req.Discard {
		return s.discard(ctx, req, rec)
	}
	return s.resolveHash(ctx, req, rec)
}

// resolveHash accepts hash when it is one of the envelope's hashes and the ledger shows it
// SUCCESS. Force overrides only a ledger that cannot judge: the envelope can no longer land (a
// ledger closed after its maxTime) and the history no longer reaches its submission. Never a
// foreign hash, a ledger that proves otherwise, or an envelope that can still land or expire.
func (s *Service) resolveHash(ctx context.Context, req Request, rec transfer.Record) (*ResolveAnswer, error) {
	env := *rec.Envelope
	var batch *transfer.BatchEnvelope // a batched key's batch item
	hash := strings.ToLower(strings.TrimSpace(req.TransactionHash))
	if !isHexHash(hash) {
		return nil, badRequest("transactionHash must be 64 hex characters")
	}
	if rec.Batch != nil {
		// A batched key: its envelope is its batch's, whose item holds the XDR and every outer
		// hash, and whose operation at the key's index must be this key's incarnation, or the hash
		// would settle the key with a transaction that does not pay it (transfer/doc.go, "Batches").
		b, err := transfer.BatchOf(ctx, s.cfg.Store, rec)
		switch {
		case errors.Is(err, transfer.ErrBatchMismatch):
			return nil, refuse(CodeHashMismatch, "the batch item of this transfer does not hold its operation %d: %v", rec.Batch.Index, err)
		case err != nil:
			return nil, storeErr(err)
		}
		env, batch = b.Envelope, &b
	}
	if !slices.Contains(env.Hashes(), hash) {
		return nil, refuse(CodeHashMismatch, "%s is neither the inner hash nor one of the outer hashes of this transfer's envelope", hash)
	}
	lk, err := s.cfg.Ledger.Lookup(ctx, env)
	if err != nil {
		return nil, ledgerErr(err)
	}
	forced := false
	switch {
	case lk.Status == transfer.LookupSuccess:
	case lk.Status == transfer.LookupFailed && rec.Batch != nil:
		// A batched key's fate is its own operation's (transfer.JudgeOperation), not the batch's
		// failure as a whole: say what the sweep does with this key.
		next := fmt.Sprintf("nothing moved for operation %d, this transfer's: the sweep (or a discard) queues it again", rec.Batch.Index)
		switch v, shortfall := transfer.JudgeOperation(env, lk, rec.Batch.Index); {
		case v == transfer.VerdictRejected && (len(lk.ResultCodes) == 0 || lk.ResultCodes[0] != "tx_failed"):
			next = "the transaction failed before its operations ran: the sweep will store the rejection"
		case v == transfer.VerdictRejected:
			next = fmt.Sprintf("this key's operation %d is the one at fault: the sweep will store the rejection", rec.Batch.Index)
		case shortfall != "":
			next += fmt.Sprintf(" (%s: the key runs again once the account is funded or fixed)", shortfall)
		}
		return nil, refuse(CodeTransactionFailed, "the ledger shows %s included in ledger %d and FAILED (%s); %s",
			lk.Hash, lk.Ledger, strings.Join(lk.ResultCodes, ", "), next)
	case lk.Status == transfer.LookupFailed && transfer.SourceShortfall(env, lk) != "":
		// The service's side failed (the paying side could not pay, or its accounts or signing):
		// the sweep (or a discard) releases the key and pages (transfer.Orchestrator.Settle);
		// nothing moved and the client may retry once an operator has fixed it.
		return nil, refuse(CodeTransactionFailed, "the ledger shows %s included in ledger %d and FAILED (%s): %s; nothing moved, the sweep (or a discard) releases the key and the client retries once the account is funded or fixed",
			lk.Hash, lk.Ledger, strings.Join(lk.ResultCodes, ", "), transfer.SourceShortfall(env, lk))
	case lk.Status == transfer.LookupFailed:
		return nil, refuse(CodeTransactionFailed, "the ledger shows %s included in ledger %d and FAILED (%s); the sweep will store the rejection",
			lk.Hash, lk.Ledger, strings.Join(lk.ResultCodes, ", "))
	case transfer.ProvenDead(env, lk):
		return nil, refuse(CodeProvenDead, "the ledger proves the envelope never landed; discard it instead")
	case lk.LatestLedgerCloseTime.IsZero() || !maxTimePassed(env, lk):
		// Not found yet, and it can still land (or not): even a forced "landed" could record a
		// payment that never happens. Wait for the ledger to decide.
		return nil, refuse(CodeStillCanLand, "the ledger does not show %s yet and no ledger has closed after the envelope's maxTime (%d): it can still land or expire; wait for it",
			hash, env.MaxTime)
	case lk.OldestLedger > 0 && lk.OldestLedger <= env.SubmittedLedger:
		// History covers the submission and the hash is not in it, and yet not proven dead: the
		// lookup's facts are incomplete. Nothing to force here. OldestLedger 0 is a lookup that
		// cannot vouch for any coverage (a load-balanced RPC, a lagging instance): as get shows it
		// (historyCovers false), that is a ledger that cannot judge, which force may override.
		return nil, refuse(CodeNotLanded, "the ledger's history covers the submission and does not show %s", hash)
	case !req.Force:
		return nil, refuse(CodeNotLanded, "the ledger does not show %s (latest ledger %d, history from %d); force with a reason if you verified it elsewhere",
			hash, lk.LatestLedger, lk.OldestLedger)
	default:
		forced = true
		lk = transfer.Lookup{Status: transfer.LookupSuccess, Hash: hash}
	}
	if rec.Batch != nil && !forced {
		if err := s.checkOperation(ctx, rec, lk.Hash); err != nil {
			return nil, err
		}
	}
	ttl := s.cfg.KeyTTL()
	if err := (transfer.Settings{KeyTTL: ttl}).Validate(); err != nil {
		return nil, &Error{Code: CodeConfigurationInvalid, Message: err.Error(), Err: err}
	}
	now := s.cfg.Clock.Now()
	if rec.Batch != nil {
		// The ledger's fee is the whole batch's; the key records its share, as every other judge
		// of a batched key does, so a batch's records and events sum to what was charged.
		lk.FeeChargedStroops = transfer.FeeShare(lk.FeeChargedStroops, rec.Batch.Index, rec.Batch.Size)
	}
	next := transfer.SettledRecord(rec, lk, now, ttl)
	next.Audit = s.audit(ctx, "resolve", req, forced, now)
	if err := transfer.ReplaceItem(ctx, s.cfg.Store, rec, next); err != nil {
		return nil, writeErr(err)
	}
	s.cfg.Ledger.Done(ctx, env)
	s.releaseBatch(ctx, rec, batch, now)
	s.logAudit(ctx, rec, next.Audit, string(transfer.StatusReplayable))
	ans := &ResolveAnswer{Action: ActionResolve, StoreKey: rec.StoreKey, Resolution: string(transfer.StatusReplayable),
		TransactionHash: next.Result.TransactionHash, Ledger: next.Result.Ledger, Forced: forced}
	if i, ok := transfer.OperationIndexOf(next); ok {
		ans.OperationIndex = &i
	}
	return ans, nil
}

// releaseBatch starts the TTL of the batch item of rec, a batched key this call just settled or
// deleted, once no key of it is unsettled (transfer.ReleaseBatch: the item keeps none while one
// is); b is the batch as read, nil to read it. A failure is logged: the batch item is then kept,
// which is safe.
func (s *Service) releaseBatch(ctx context.Context, rec transfer.Record, b *transfer.BatchEnvelope, now time.Time) {
	bs, ok := s.cfg.Store.(transfer.BatchStore)
	if !ok || rec.Batch == nil {
		return
	}
	if b == nil {
		got, err := transfer.BatchOf(ctx, s.cfg.Store, rec)
		if err != nil {
			return
		}
		b = &got
	}
	ttl := transfer.DefaultSettings().KeyTTL
	if s.cfg.KeyTTL != nil {
		ttl = max(s.cfg.KeyTTL(), transfer.MinKeyTTL)
	}
	if _, err := transfer.ReleaseBatch(ctx, bs, *b, []string{rec.StoreKey}, now, ttl); err != nil {
		s.cfg.Logger.WarnContext(ctx, "starting a decided batch item's TTL failed; it is kept", "innerHash", b.Envelope.InnerHash, "err", err)
	}
}

// checkOperation checks on chain, when the Ledger can read a landed transaction's operations
// (transfer.OperationReader), that operation rec.Batch.Index of the transaction hash pays rec's
// request: a payment from the vault to its destination (the M... address and id of a muxed
// wallet, else the account, never muxed), its asset and amount. A transaction whose operation at the key's
// index pays anything else never settles the key (transfer/doc.go, "Batches").
func (s *Service) checkOperation(ctx context.Context, rec transfer.Record, hash string) *Error {
	r, ok := s.cfg.Ledger.(transfer.OperationReader)
	if !ok {
		return nil
	}
	if hash == "" {
		hash = rec.Envelope.InnerHash
	}
	p, err := r.PaymentAt(ctx, hash, rec.Batch.Index)
	switch {
	case errors.Is(err, transfer.ErrNotFound):
		return refuse(CodeHashMismatch, "the ledger shows no payment at operation %d of %s, this transfer's operation", rec.Batch.Index, hash)
	case err != nil:
		return ledgerErr(err)
	}
	req := rec.Request
	paid, want := p.Counterparty, req.Wallet().Scope()
	if p.Muxed != "" {
		paid = p.Muxed + " (id " + p.MuxedID + ")"
	}
	if req.Wallet().Muxed() {
		want = req.WalletAddress + " (id " + strconv.FormatUint(req.MuxedID, 10) + ")"
	}
	if p.Direction != transfer.DirectionOut || paid != want || !strings.EqualFold(p.Asset, req.Asset) || p.Stroops != req.Stroops {
		return refuse(CodeHashMismatch, "operation %d of %s pays %d stroops of %s to %s, not this transfer's %d stroops of %s to %s",
			rec.Batch.Index, hash, p.Stroops, p.Asset, paid, req.Stroops, req.Asset, want)
	}
	return nil
}

// discard releases the key when Settle proves nothing can land (an async item is queued again
// instead, and its message sent: Resolution "requeued"). If the envelope landed or failed
// on chain, Settle stores that instead and the discard is refused. Force overrides a ledger whose
// history does not cover the submission, never one on which the envelope can still land.
func (s *Service) discard(ctx context.Context, req Request, rec transfer.Record) (*ResolveAnswer, error) {
	st, err := s.cfg.Settler.Settle(ctx, rec)
	var cfgErr *transfer.ConfigError
	switch {
	case errors.As(err, &cfgErr):
		return nil, &Error{Code: CodeConfigurationInvalid, Message: cfgErr.Error(), Err: err}
	case errors.Is(err, transfer.ErrConditionFailed):
		return nil, refuse(CodeConflict, "the transfer changed while it was being judged; read it again")
	case errors.Is(err, transfer.ErrBatchMismatch):
		return s.discardUnbatched(ctx, req, rec, err)
	case err != nil && st.Lookup == nil:
		return nil, ledgerErr(err)
	case err != nil:
		return nil, storeErr(err)
	}
	switch st.Resolution {
	case transfer.ResolvedReleased:
		s.cfg.Logger.InfoContext(ctx, "in-doubt transfer discarded: the ledger proves it dead", "storeKey", rec.StoreKey,
			"operator", req.Operator, "reason", req.Reason)
		return &ResolveAnswer{Action: ActionResolve, StoreKey: rec.StoreKey, Resolution: string(transfer.ResolvedReleased)}, nil
	case transfer.ResolvedRequeued:
		// An async transfer is never dropped once the ledger proves its envelope dead: Settle
		// queued it again (README.md, "Asynchronous transfers"). Its message is sent now, or held
		// back for a failure's Retry-After (transfer.RequeueDelay); if that fails, the sweep
		// sends it once the item is older than its grace.
		sent := s.sendRequeued(ctx, st)
		s.cfg.Logger.InfoContext(ctx, "in-doubt async transfer proven dead: queued again", "storeKey", rec.StoreKey,
			"operator", req.Operator, "reason", req.Reason, "messageSent", sent)
		return &ResolveAnswer{Action: ActionResolve, StoreKey: rec.StoreKey, Resolution: string(transfer.ResolvedRequeued)}, nil
	case transfer.ResolvedLanded, transfer.ResolvedFailed:
		return nil, refuse(CodeLanded, "discard refused: the envelope was included in ledger %d (%s); the transfer is now %s",
			st.Lookup.Ledger, st.Lookup.Status, st.Resolution)
	}
	lk := st.Lookup
	if lk == nil || lk.LatestLedgerCloseTime.IsZero() || !maxTimePassed(*rec.Envelope, *lk) {
		return nil, refuse(CodeStillCanLand, "discard refused: no ledger has closed after the envelope's maxTime (%d), so it can still land; wait for it",
			rec.Envelope.MaxTime)
	}
	if !req.Force {
		return nil, refuse(CodeNotProvenDead, "the envelope's maxTime has passed but the ledger's history (from %d) does not reach the submission (ledger %d): it cannot prove nothing landed. Look the inner hash up in full history (an explorer or a full-history Horizon) first: if it landed, a forced discard lets the next retry pay again",
			lk.OldestLedger, rec.Envelope.SubmittedLedger)
	}
	return s.forceDiscard(ctx, req, rec)
}

// discardUnbatched answers the discard of rec, a batched key whose batch item does not hold its
// operation (why, transfer.ErrBatchMismatch): no judge can read its batch's XDR or operations,
// so the ledger cannot judge it for this key (NOT_PROVEN_DEAD), and only a forced discard
// releases it, as one of an item whose history the ledger no longer holds; never while its
// hashes are found (resolve with the hash instead) or while no ledger has closed after its
// maxTime (it can still land).
func (s *Service) discardUnbatched(ctx context.Context, req Request, rec transfer.Record, why error) (*ResolveAnswer, error) {
	if !req.Force {
		return nil, refuse(CodeNotProvenDead, "the batch item of this transfer does not hold its operation %d (%v), so the ledger cannot judge it; look its inner hash up in full history, then force the discard with the innerHash and a reason once no ledger can include it",
			rec.Batch.Index, why)
	}
	lk, err := s.cfg.Ledger.Lookup(ctx, *rec.Envelope)
	switch {
	case err != nil:
		return nil, ledgerErr(err)
	case lk.Status != transfer.LookupNotFound:
		return nil, refuse(CodeLanded, "discard refused: the ledger shows %s %s in ledger %d; resolve with that hash instead", lk.Hash, lk.Status, lk.Ledger)
	case lk.LatestLedgerCloseTime.IsZero() || !maxTimePassed(*rec.Envelope, lk):
		return nil, refuse(CodeStillCanLand, "discard refused: no ledger has closed after the envelope's maxTime (%d), so it can still land; wait for it",
			rec.Envelope.MaxTime)
	}
	return s.forceDiscard(ctx, req, rec)
}

// forceDiscard records the audit on the item, then deletes it: the stream's REMOVE record carries
// the audit in its old image, so the alert function logs who released the key and why.
func (s *Service) forceDiscard(ctx context.Context, req Request, rec transfer.Record) (*ResolveAnswer, error) {
	now := s.cfg.Clock.Now()
	next := rec
	next.Version++
	next.UpdatedAt = now
	next.Audit = s.audit(ctx, "discard", req, true, now)
	// Both writes name the incarnation and envelope read (transfer.Expect): a discard can never
	// release a later claim of the key.
	if err := transfer.ReplaceItem(ctx, s.cfg.Store, rec, next); err != nil {
		return nil, writeErr(err)
	}
	if err := transfer.DeleteItem(ctx, s.cfg.Store, next); err != nil {
		return nil, writeErr(err)
	}
	if rec.Envelope != nil {
		s.cfg.Ledger.Done(ctx, *rec.Envelope)
	}
	s.releaseBatch(ctx, rec, nil, now)
	s.logAudit(ctx, rec, next.Audit, string(transfer.ResolvedReleased))
	return &ResolveAnswer{Action: ActionResolve, StoreKey: rec.StoreKey, Resolution: string(transfer.ResolvedReleased), Forced: true}, nil
}

func (s *Service) audit(ctx context.Context, action string, req Request, forced bool, now time.Time) *transfer.Audit {
	a := &transfer.Audit{Action: action, Operator: strings.TrimSpace(req.Operator), Reason: strings.TrimSpace(req.Reason), Forced: forced, At: now}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		a.RequestID = lc.AwsRequestID
	}
	return a
}

func (s *Service) logAudit(ctx context.Context, rec transfer.Record, a *transfer.Audit, resolution string) {
	level := slog.LevelInfo
	if a.Forced {
		level = slog.LevelWarn
	}
	s.cfg.Logger.Log(ctx, level, "in-doubt transfer resolved by an operator", "storeKey", rec.StoreKey,
		"resolution", resolution, "action", a.Action, "operator", a.Operator, "reason", a.Reason, "forced", a.Forced)
}

func writeErr(err error) *Error {
	if errors.Is(err, transfer.ErrConditionFailed) {
		return refuse(CodeConflict, "the transfer changed while it was being resolved; read it again")
	}
	return storeErr(err)
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
