package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The daily reconciliation (README.md, "The daily reconciliation"): for one UTC day, the table's
// transfers set against the chain (transfer.ChainDay, read from Stellar RPC) and the vault's
// balance. It is the action "daily" ({"action":"daily","day":"YYYY-MM-DD"}; without day, the day
// before the invocation's, as the schedule sends it) and "report" (the stored report of a day).
//
// Which transfers belong to the day: those whose transaction landed in one of the day's ledgers.
// A transfer settles after its transaction lands, at the earliest seconds later (a transaction
// landed at 23:59:58 is often settled the next day), and an in-doubt one whenever the sweep or an
// operator settles it. So the table's side is every lasting record settled from the day on, for
// DailyLookAhead days (and never past the invocation's day), every item in doubt now and every
// expired claim: each explains the chain payments whose hash is one of its envelope's, whatever
// day it settled (and from the day before, for a clock behind the ledger's). A record settled as
// paid is expected on chain on the day of its ledger (transfer.Result.Ledger).
//
// What it reports, each list sorted and clipped to DailyListMax entries (its count exact):
//   - absentOnChain: a transfer settled as paid whose ledger is in the day's range and whose
//     transaction is not among the day's transactions;
//   - failedOnChain: the same, found FAILED;
//   - mismatched: found, but what moved differs from the transfer (direction, amount, asset,
//     destination and its muxed id, memo, ledger);
//   - unexplained: a movement of a configured asset from or to the vault on chain that no transfer
//     explains (an incoming payment that tops the vault up is one: the service never asked for it);
//     a second payment in the transaction of a transfer is one too, and so is a payment whose
//     transfer is recorded as not paid (rejected, released, cancelled);
//   - otherOperations: an operation touching the vault that is not a payment of a configured asset;
//   - assets: per asset, in stroops, what the transfers say moved, what the chain's payments add up
//     to, and the vault's actual movement from the metadata's ledger-entry changes where readable;
//     an actual movement that differs from the payments' is a discrepancy;
//   - inDoubt and unsettled: the items in doubt now, and the expired claims and queued transfers
//     accepted by the day's end, with whether the chain shows their transaction in the day
//     (listed, not counted: they have their own alarms);
//   - unverified: records settled on the day as paid by a forced resolution whose transaction is
//     not in the day (listed, not counted: the ledger could not prove it when it was forced).
//
// Discrepancies is the sum of the counted lists and the assets whose actual movement differs;
// any discrepancy logs the report at WARN, writes the metric and publishes the event with ok false.

// DailyLookAhead is how many days after the reported day the lasting records are read: stellar-rpc's
// default history retention (about 7 days), past which the day cannot be reported again anyway.
const DailyLookAhead = 7

// DailyListMax clips each list of a report; the counts are exact. Eight lists of 40 entries of
// under 700 bytes keep a report within a CloudWatch Logs event (256 KB) and a stored item
// (dynamo.MaxDailyReport).
const DailyListMax = 40

// dailyMargin is how long before the invocation's deadline the daily reading gives up: enough to
// store nothing, log the failure and write the metric.
const dailyMargin = 3 * time.Second

// maxLoggedReport bounds the report logged whole; a larger one is logged as its summary.
const maxLoggedReport = 200_000

// Actions of the daily reconciliation.
const (
	ActionDaily  = "daily"
	ActionReport = "report"
)

// Codes of the daily reconciliation's refusals.
const (
	// CodeDayNotOver: the day asked for has not ended on the ledger (or is in the future).
	CodeDayNotOver = "DAY_NOT_OVER"
	// CodeHistoryNotCovered: the ledger's history no longer reaches the day's start.
	CodeHistoryNotCovered = "HISTORY_NOT_COVERED"
	// CodeDailyNotSupported: this deployment cannot read a day's transactions (Horizon only), or
	// has no daily reconciliation configured.
	CodeDailyNotSupported = "DAILY_NOT_SUPPORTED"
	// CodeReportNotFound: no report is stored for the day.
	CodeReportNotFound = "REPORT_NOT_FOUND"
)

// ArchiveLister lists the lasting records of a day (dynamo.Store.ListArchivedDay).
type ArchiveLister interface {
	ListArchivedDay(ctx context.Context, day time.Time, limit int, cursor string) ([]transfer.Archive, string, error)
}

// ReportStore keeps the daily reports (dynamo.Store).
type ReportStore interface {
	PutDailyReport(ctx context.Context, day time.Time, report []byte, generatedAt time.Time, discrepancies int) error
	// GetDailyReport is transfer.ErrNotFound (wrapped) when none was stored.
	GetDailyReport(ctx context.Context, day time.Time) ([]byte, error)
}

// DailyGauge publishes the outcome of a run (metrics.Writer): its discrepancies, or a run that
// could not report.
type DailyGauge interface {
	DailyDiscrepancies(ctx context.Context, n int)
	DailyFailed(ctx context.Context)
}

// Daily configures the daily reconciliation; Config.Daily nil refuses daily with
// DAILY_NOT_SUPPORTED. Chain, Archives and Reports are required; Gauge and Publish optional.
type Daily struct {
	Chain    transfer.DayReader
	Archives ArchiveLister
	Reports  ReportStore
	Gauge    DailyGauge
	// Publish sends the report's summary as an event (EventBridge, detail-type DailyDetailType);
	// its failure is logged at ERROR and does not fail the run.
	Publish func(ctx context.Context, s DailySummary) error
}

// DailyDetailType is the event's detail-type.
const DailyDetailType = "Daily Reconciliation"

// DailyReport is the report of one UTC day. Amounts are stroops (10^-7 units), signed: negative
// leaves the vault.
type DailyReport struct {
	Action      string    `json:"action"`
	Day         string    `json:"day"`
	GeneratedAt time.Time `json:"generatedAt"`
	// Partial: the day is not over; the report reaches Ledgers.Last only and was not stored
	// (Request.SoFar).
	Partial bool `json:"partial"`
	// OK: no discrepancy.
	OK            bool `json:"ok"`
	Discrepancies int  `json:"discrepancies"`
	// Ledgers are the day's ledgers as the chain shows them.
	Ledgers      DailyLedgers `json:"ledgers"`
	ContractMode bool         `json:"contractMode"`
	// Matched is how many transfers settled as paid were found on chain as recorded.
	Matched int                   `json:"matched"`
	Assets  []DailyAsset          `json:"assets"`
	Counts  DailyCounts           `json:"counts"`
	Absent  []DailyItem           `json:"absentOnChain"`
	Failed  []DailyItem           `json:"failedOnChain"`
	Differs []DailyItem           `json:"mismatched"`
	Unknown []DailyPayment        `json:"unexplained"`
	Other   []transfer.ChainOther `json:"otherOperations"`
	InDoubt []DailyItem           `json:"inDoubt"`
	// Unsettled are the transfers not settled when the report was made, accepted by the day's end:
	// expired claims (an invocation died holding one) and queued transfers no submitter took yet.
	Unsettled []DailyItem `json:"unsettled"`
	Unsure    []DailyItem `json:"unverified"`
}

// DailyLedgers are the day's ledgers: [first, last], their close times and the transactions read.
type DailyLedgers struct {
	First        uint32    `json:"first"`
	Last         uint32    `json:"last"`
	FirstClose   time.Time `json:"firstClose,omitzero"`
	LastClose    time.Time `json:"lastClose,omitzero"`
	Transactions int       `json:"transactions"`
}

// DailyCounts are the lists' exact sizes.
type DailyCounts struct {
	Absent      int `json:"absentOnChain"`
	Failed      int `json:"failedOnChain"`
	Mismatched  int `json:"mismatched"`
	Unexplained int `json:"unexplained"`
	Other       int `json:"otherOperations"`
	Balance     int `json:"balanceMismatches"`
	InDoubt     int `json:"inDoubt"`
	Unsettled   int `json:"unsettled"`
	Unverified  int `json:"unverified"`
}

// DailyAsset is one asset's movement over the day, stroops, signed (negative leaves the vault).
type DailyAsset struct {
	Asset string `json:"asset"`
	// Transfers is what the transfers settled here as paid with a ledger of the day say moved:
	// PaidOut (withdrawals, positive), Received (deposits), Net = Received - PaidOut.
	PaidOut  int64 `json:"paidOut"`
	Received int64 `json:"received"`
	Net      int64 `json:"net"`
	// ChainNet is what the chain's decoded payments of the day add up to; of it, InDoubtNet is the
	// in-doubt transfers' and UnexplainedNet the unexplained payments'.
	ChainNet       int64 `json:"chainNet"`
	InDoubtNet     int64 `json:"inDoubtNet"`
	UnexplainedNet int64 `json:"unexplainedNet"`
	// ActualNet is the vault's balance movement from the metadata, with its Opening and Closing
	// balance when a change was seen; nil when not readable (ActualReadable false: contract mode,
	// or metadata without the vault's changes).
	ActualReadable bool   `json:"actualReadable"`
	ActualNet      *int64 `json:"actualNet,omitempty"`
	Opening        *int64 `json:"opening,omitempty"`
	Closing        *int64 `json:"closing,omitempty"`
	// Difference is ActualNet (or ChainNet when not readable) - Net: what moved that the transfers
	// do not say, or what they say that did not move.
	Difference int64 `json:"difference"`
	// BalanceMismatch: ActualNet differs from ChainNet: the vault moved in ways no payment shows.
	BalanceMismatch bool `json:"balanceMismatch"`
}

// DailyItem is a transfer of the table in a report.
type DailyItem struct {
	StoreKey       string         `json:"storeKey"`
	IdempotencyKey string         `json:"idempotencyKey"`
	Status         string         `json:"status"`
	OperationType  string         `json:"operationType"`
	WalletAddress  string         `json:"walletAddress"`
	Amount         string         `json:"amount"`
	Asset          string         `json:"asset"`
	Memo           *transfer.Memo `json:"memo,omitempty"`
	// TransactionHash and Ledger are what the table recorded (settled), or the envelope's inner
	// hash (in doubt).
	TransactionHash string    `json:"transactionHash,omitempty"`
	Ledger          uint32    `json:"ledger,omitempty"`
	SettledAt       time.Time `json:"settledAt,omitzero"`
	Forced          bool      `json:"forced,omitempty"`
	// OnChain: the day's chain shows its transaction (in doubt: it landed); ChainLedger where.
	OnChain     bool   `json:"onChain"`
	ChainLedger uint32 `json:"chainLedger,omitempty"`
	// Differences are the fields that differ from the chain (mismatched).
	Differences []DailyDifference `json:"differences,omitempty"`
}

// DailyDifference is one field of a transfer that differs from its payment on chain.
type DailyDifference struct {
	Field string `json:"field"`
	Here  string `json:"here"`
	Chain string `json:"chain"`
}

// DailyPayment is a chain payment no transfer explains, with why.
type DailyPayment struct {
	transfer.ChainPayment
	// Note says why a payment that a transfer names is still unexplained.
	Note     string `json:"note,omitempty"`
	StoreKey string `json:"storeKey,omitempty"`
}

// DailySummary is the event's detail and the log's summary: the report without its lists.
type DailySummary struct {
	Day           string       `json:"day"`
	OK            bool         `json:"ok"`
	Discrepancies int          `json:"discrepancies"`
	Matched       int          `json:"matched"`
	Counts        DailyCounts  `json:"counts"`
	Assets        []DailyAsset `json:"assets"`
	Ledgers       DailyLedgers `json:"ledgers"`
	GeneratedAt   time.Time    `json:"generatedAt"`
}

// Summary is r without its lists.
func (r *DailyReport) Summary() DailySummary {
	return DailySummary{Day: r.Day, OK: r.OK, Discrepancies: r.Discrepancies, Matched: r.Matched, Counts: r.Counts,
		Assets: r.Assets, Ledgers: r.Ledgers, GeneratedAt: r.GeneratedAt}
}

// dayOf parses the request's day ("YYYY-MM-DD", UTC); "" is the day before now's, or now's own
// with today.
func dayOf(s string, now time.Time, today bool) (time.Time, error) {
	if s == "" {
		back := -1
		if today {
			back = 0
		}
		y, m, d := now.UTC().AddDate(0, 0, back).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC), nil
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil || t.Format(time.DateOnly) != s {
		return time.Time{}, badRequest("day must be a UTC date YYYY-MM-DD")
	}
	return t, nil
}

// storedReport answers report: the stored report of the day, as it was stored.
func (s *Service) storedReport(ctx context.Context, req Request) (json.RawMessage, error) {
	d := s.cfg.Daily
	if d == nil || d.Reports == nil {
		return nil, refuse(CodeDailyNotSupported, "no daily reconciliation is configured on this function")
	}
	day, err := dayOf(req.Day, s.cfg.Clock.Now(), false)
	if err != nil {
		return nil, err
	}
	b, err := d.Reports.GetDailyReport(ctx, day)
	if errors.Is(err, transfer.ErrNotFound) {
		return nil, refuse(CodeReportNotFound, "no report is stored for %s; run {\"action\":\"daily\",\"day\":%q}", day.Format(time.DateOnly), day.Format(time.DateOnly))
	}
	if err != nil {
		return nil, storeErr(err)
	}
	return json.RawMessage(b), nil
}

// daily runs the day's reconciliation: reads both sides, builds the report, stores it, logs it,
// writes the metric and publishes the event. A run that cannot report writes DailyFailed when it
// is the scheduled run (no day named, not soFar), refused or failed, or any run that failed (the
// store, the ledger): an operator's refused request (a malformed day, a day not over) does not.
func (s *Service) daily(ctx context.Context, req Request) (*DailyReport, error) {
	r, err := s.runDaily(ctx, req)
	if err != nil && s.cfg.Daily != nil && s.cfg.Daily.Gauge != nil {
		var e *Error
		if req.Day == "" && !req.SoFar || !errors.As(err, &e) || e.Err != nil {
			s.cfg.Daily.Gauge.DailyFailed(ctx)
		}
	}
	return r, err
}

func (s *Service) runDaily(ctx context.Context, req Request) (*DailyReport, error) {
	d := s.cfg.Daily
	if d == nil || d.Chain == nil || d.Archives == nil || d.Reports == nil {
		return nil, refuse(CodeDailyNotSupported, "no daily reconciliation is configured on this function")
	}
	now := s.cfg.Clock.Now().UTC()
	start, err := dayOf(req.Day, now, req.SoFar)
	if err != nil {
		return nil, err
	}
	partial := req.SoFar && !start.Add(24*time.Hour).Before(now)
	switch {
	case start.After(now):
		return nil, refuse(CodeDayNotOver, "%s (UTC) has not begun", start.Format(time.DateOnly))
	case !partial && !start.Add(24*time.Hour).Before(now):
		return nil, refuse(CodeDayNotOver, "%s (UTC) is not over yet; a day is reported once it has ended (soFar: true reports it up to the latest ledger, without storing it)", start.Format(time.DateOnly))
	}
	// The reading stops dailyMargin before the invocation's deadline, so that a day too long to
	// read fails here, counted (DailyFailed) and logged, rather than being cut off by Lambda.
	readCtx := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		readCtx, cancel = context.WithDeadline(ctx, dl.Add(-dailyMargin))
		defer cancel()
	}
	chain, err := d.Chain.VaultDay(readCtx, start, partial)
	switch {
	case errors.Is(err, transfer.ErrDayNotOver):
		return nil, refuse(CodeDayNotOver, "%s", err.Error())
	case errors.Is(err, transfer.ErrHistoryNotCovered):
		return nil, refuse(CodeHistoryNotCovered, "%s; the report stored when the day was run in time is still readable ({\"action\":\"report\"})", err.Error())
	case errors.Is(err, transfer.ErrDailyNotSupported):
		return nil, refuse(CodeDailyNotSupported, "%s", err.Error())
	case err != nil:
		return nil, ledgerErr(err)
	}
	side, err := s.tableSide(readCtx, start, now)
	if err != nil {
		return nil, err
	}
	report := buildReport(start, now, chain, side)
	report.Partial = partial
	body, err := json.Marshal(report)
	if err != nil {
		return nil, &Error{Code: CodeStoreUnavailable, Message: "the report could not be encoded", Err: err}
	}
	if partial {
		// The day so far is not the day's report: nothing stored, counted or published.
		s.cfg.Logger.InfoContext(ctx, "daily reconciliation so far", "report", json.RawMessage(body))
		return report, nil
	}
	if err := d.Reports.PutDailyReport(ctx, start, body, report.GeneratedAt, report.Discrepancies); err != nil {
		return nil, storeErr(err)
	}
	level := slog.LevelInfo
	if !report.OK {
		level = slog.LevelWarn
	}
	if len(body) <= maxLoggedReport {
		s.cfg.Logger.Log(ctx, level, "daily reconciliation", "report", json.RawMessage(body))
	} else {
		s.cfg.Logger.Log(ctx, level, "daily reconciliation", "summary", report.Summary(), "stored", dailyKeyHint(report.Day))
	}
	if d.Gauge != nil {
		d.Gauge.DailyDiscrepancies(ctx, report.Discrepancies)
	}
	if d.Publish != nil {
		if err := d.Publish(ctx, report.Summary()); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "daily reconciliation event not published", "day", report.Day, "err", err)
		}
	}
	return report, nil
}

// tableSide is what the table holds that can explain the day's chain.
type tableSide struct {
	// records: the lasting records settled from the day on, one per incarnation.
	records []transfer.Record
	// live: the items in doubt now; unsettled: the expired claims and the queued items queued
	// before the day's end.
	live, unsettled []transfer.Record
}

// tableSide reads the records settled from the day before start's through DailyLookAhead days
// after it (never past now's day), the in-doubt items, the expired claims and the queued items.
func (s *Service) tableSide(ctx context.Context, start, now time.Time) (tableSide, error) {
	var side tableSide
	seen := map[string]bool{}
	// From the day before: a record is filed under its settlement's day on the settling
	// function's clock, which may run a little behind the ledger's close times.
	for i := -1; i <= DailyLookAhead; i++ {
		day := start.AddDate(0, 0, i)
		if day.After(now) {
			break
		}
		cursor := ""
		for {
			page, next, err := s.cfg.Daily.Archives.ListArchivedDay(ctx, day, 0, cursor)
			if err != nil {
				return side, storeErr(err)
			}
			for _, a := range page {
				id := a.Record.StoreKey + "#" + a.Record.ClaimID
				if !seen[id] {
					seen[id] = true
					side.records = append(side.records, a.Record)
				}
			}
			if next == "" {
				break
			}
			cursor = next
		}
	}
	cursor := ""
	for {
		page, next, err := s.cfg.Store.ListInDoubt(ctx, MaxListLimit, cursor)
		if err != nil {
			return side, storeErr(err)
		}
		side.live = append(side.live, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	cursor = ""
	for {
		page, next, err := s.cfg.Store.ListExpiredClaims(ctx, now, MaxListLimit, cursor)
		if err != nil {
			return side, storeErr(err)
		}
		side.unsettled = append(side.unsettled, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	if s.cfg.Queued != nil {
		cursor = ""
		for {
			page, next, err := s.cfg.Queued.ListQueued(ctx, start.Add(24*time.Hour), MaxListLimit, cursor)
			if err != nil {
				return side, storeErr(err)
			}
			side.unsettled = append(side.unsettled, page...)
			if next == "" {
				break
			}
			cursor = next
		}
	}
	return side, nil
}

// recordHashes are the hashes that name rec's transaction: its result's and its envelope's.
func recordHashes(rec transfer.Record) []string {
	var hs []string
	if rec.Result != nil && rec.Result.TransactionHash != "" {
		hs = append(hs, strings.ToLower(rec.Result.TransactionHash))
	}
	if rec.Envelope != nil {
		for _, h := range rec.Envelope.Hashes() {
			if h != "" {
				hs = append(hs, strings.ToLower(h))
			}
		}
	}
	return hs
}

// paid reports whether rec is settled as paid: replayable.
func paid(rec transfer.Record) bool { return rec.Status == transfer.StatusReplayable }

// buildReport sets side against chain for the day starting at start.
func buildReport(start, now time.Time, chain transfer.ChainDay, side tableSide) *DailyReport {
	r := &DailyReport{Action: ActionDaily, Day: start.Format(time.DateOnly), GeneratedAt: now, ContractMode: chain.ContractMode,
		Ledgers: DailyLedgers{First: chain.FirstLedger, Last: chain.LastLedger, FirstClose: chain.FirstClose, LastClose: chain.LastClose,
			Transactions: chain.Transactions}}
	inDay := func(ledger uint32) bool {
		return chain.FirstLedger > 0 && ledger >= chain.FirstLedger && ledger <= chain.LastLedger
	}
	// The day's payments by hash (inner and outer), in order.
	byHash := map[string][]int{}
	for i, p := range chain.Payments {
		byHash[strings.ToLower(p.Hash)] = append(byHash[strings.ToLower(p.Hash)], i)
		if p.OuterHash != "" {
			byHash[strings.ToLower(p.OuterHash)] = append(byHash[strings.ToLower(p.OuterHash)], i)
		}
	}
	explained := make([]bool, len(chain.Payments))
	notes := make([]DailyPayment, len(chain.Payments))
	assets := map[string]*DailyAsset{}
	asset := func(code string) *DailyAsset {
		k := strings.ToUpper(code)
		if a := assets[k]; a != nil {
			return a
		}
		a := &DailyAsset{Asset: code}
		assets[k] = a
		return a
	}
	for code := range chain.Balances {
		asset(code)
	}
	for _, p := range chain.Payments {
		asset(p.Asset).ChainNet += signed(p)
	}
	// find: the first payment of rec's transaction in the day, and whether its transaction failed.
	// A payment explains one transfer: a second record naming the same transaction finds none. A
	// batched record (rec.Batch) is explained only by its own operation of the batch's transaction
	// (transfer/doc.go, "Batches"), so a neighbour's payment never stands for it.
	find := func(rec transfer.Record) (int, bool) {
		for _, h := range recordHashes(rec) {
			for _, i := range byHash[h] {
				if !explained[i] && (rec.Batch == nil || chain.Payments[i].Op == rec.Batch.Index) {
					return i, false
				}
			}
		}
		for _, h := range recordHashes(rec) {
			if _, ok := chain.Failed[h]; ok {
				return -1, true
			}
		}
		return -1, false
	}
	for _, rec := range side.records {
		i, failed := find(rec)
		if !paid(rec) {
			if i >= 0 && !explained[i] {
				notes[i] = DailyPayment{Note: "its transfer is recorded as " + string(rec.Status) + ", not as paid", StoreKey: rec.StoreKey}
			}
			continue
		}
		ledger := uint32(0)
		if rec.Result != nil {
			ledger = rec.Result.Ledger
		}
		forced := rec.Audit != nil && rec.Audit.Forced
		// Whose day is it: the ledger the table recorded, or, for a record without one (a forced
		// resolution), the ledger the chain shows it in.
		switch {
		case ledger != 0 && !inDay(ledger):
			if i >= 0 {
				// Recorded in another ledger, yet its transaction is in this day: a difference.
				p := chain.Payments[i]
				explained[i] = true
				it := itemOfRecord(rec)
				it.OnChain, it.ChainLedger = true, p.Ledger
				it.Differences = append(differences(rec, p), DailyDifference{Field: "ledger", Here: u32(ledger), Chain: u32(p.Ledger)})
				addTransfer(asset(rec.Request.Asset), rec)
				r.Differs = append(r.Differs, it)
			} else if failed {
				// Recorded as landed in another ledger, yet included FAILED in this day.
				addTransfer(asset(rec.Request.Asset), rec)
				r.Failed = append(r.Failed, itemOfRecord(rec))
			}
			continue
		case ledger == 0 && i < 0 && !failed:
			if forced && transfer.ArchiveDay(rec.UpdatedAt) == r.Day {
				r.Unsure = append(r.Unsure, itemOfRecord(rec))
			}
			continue
		}
		addTransfer(asset(rec.Request.Asset), rec)
		it := itemOfRecord(rec)
		switch {
		case i >= 0:
			p := chain.Payments[i]
			explained[i] = true
			it.OnChain, it.ChainLedger = true, p.Ledger
			diffs := differences(rec, p)
			if ledger != 0 && ledger != p.Ledger {
				diffs = append(diffs, DailyDifference{Field: "ledger", Here: u32(ledger), Chain: u32(p.Ledger)})
			}
			if len(diffs) == 0 {
				r.Matched++
				continue
			}
			it.Differences = diffs
			r.Differs = append(r.Differs, it)
		case failed:
			r.Failed = append(r.Failed, it)
		default:
			r.Absent = append(r.Absent, it)
		}
	}
	// The items not settled: their payment on chain is explained (not unexplained: the sweep or
	// an operator will settle it), and shown with the item.
	notSettled := func(rec transfer.Record) (DailyItem, bool) {
		it := itemOfRecord(rec)
		if rec.Envelope != nil {
			it.TransactionHash = rec.Envelope.InnerHash
		}
		for _, h := range recordHashes(rec) {
			if is := byHash[h]; len(is) > 0 {
				p := chain.Payments[is[0]]
				if !explained[is[0]] {
					explained[is[0]] = true
					asset(p.Asset).InDoubtNet += signed(p)
				}
				it.OnChain, it.ChainLedger = true, p.Ledger
				break
			}
		}
		return it, it.OnChain || !rec.CreatedAt.After(start.Add(24*time.Hour))
	}
	for _, rec := range side.live {
		if it, ok := notSettled(rec); ok {
			r.InDoubt = append(r.InDoubt, it)
		}
	}
	for _, rec := range side.unsettled {
		if it, ok := notSettled(rec); ok {
			r.Unsettled = append(r.Unsettled, it)
		}
	}
	for i, p := range chain.Payments {
		if explained[i] {
			continue
		}
		dp := notes[i]
		dp.ChainPayment = p
		if dp.Note == "" && len(byHash[strings.ToLower(p.Hash)]) > 1 && byHash[strings.ToLower(p.Hash)][0] != i {
			dp.Note = "another payment of the same transaction is a transfer's; this one is not"
		}
		asset(p.Asset).UnexplainedNet += signed(p)
		r.Unknown = append(r.Unknown, dp)
	}
	r.Other = append(r.Other, chain.Other...)
	codes := make([]string, 0, len(assets))
	for k := range assets {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for _, k := range codes {
		a := assets[k]
		a.Net = a.Received - a.PaidOut
		if m, ok := chain.Balances[k]; ok && m.Readable && !chain.ContractMode {
			a.ActualReadable = true
			net := m.Net
			a.ActualNet = &net
			if m.HasBalances {
				o, c := m.Opening, m.Closing
				a.Opening, a.Closing = &o, &c
			}
			a.Difference = net - a.Net
			a.BalanceMismatch = net != a.ChainNet
		} else {
			a.Difference = a.ChainNet - a.Net
		}
		if a.BalanceMismatch {
			r.Counts.Balance++
		}
		r.Assets = append(r.Assets, *a)
	}
	r.Counts.Absent, r.Counts.Failed, r.Counts.Mismatched = len(r.Absent), len(r.Failed), len(r.Differs)
	r.Counts.Unexplained, r.Counts.Other, r.Counts.InDoubt, r.Counts.Unverified = len(r.Unknown), len(r.Other), len(r.InDoubt), len(r.Unsure)
	r.Counts.Unsettled = len(r.Unsettled)
	r.Discrepancies = r.Counts.Absent + r.Counts.Failed + r.Counts.Mismatched + r.Counts.Unexplained + r.Counts.Other + r.Counts.Balance
	r.OK = r.Discrepancies == 0
	r.Absent, r.Failed, r.Differs = clip(r.Absent), clip(r.Failed), clip(r.Differs)
	r.InDoubt, r.Unsure, r.Unknown, r.Unsettled = clip(r.InDoubt), clip(r.Unsure), clip(r.Unknown), clip(r.Unsettled)
	r.Other = clip(r.Other)
	return r
}

// clip keeps the first DailyListMax entries, and never answers null for an empty list.
func clip[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s[:min(len(s), DailyListMax)]
}

// signed is p's amount as the vault sees it: negative out, positive in.
func signed(p transfer.ChainPayment) int64 {
	if p.Direction == transfer.DirectionOut {
		return -p.Stroops
	}
	return p.Stroops
}

// addTransfer adds rec's amount to what the transfers say moved.
func addTransfer(a *DailyAsset, rec transfer.Record) {
	if rec.Request.OperationType == transfer.Deposit {
		a.Received += rec.Request.Stroops
	} else {
		a.PaidOut += rec.Request.Stroops
	}
}

// differences are the fields in which p is not the payment rec asked for.
func differences(rec transfer.Record, p transfer.ChainPayment) []DailyDifference {
	var out []DailyDifference
	req := rec.Request
	want := transfer.DirectionOut
	if req.OperationType == transfer.Deposit {
		want = transfer.DirectionIn
	}
	if p.Direction != want {
		out = append(out, DailyDifference{Field: "direction", Here: want, Chain: p.Direction})
	}
	if req.Stroops != p.Stroops {
		out = append(out, DailyDifference{Field: "amount", Here: stroopsText(req.Stroops), Chain: stroopsText(p.Stroops)})
	}
	if !strings.EqualFold(req.Asset, p.Asset) {
		out = append(out, DailyDifference{Field: "asset", Here: req.Asset, Chain: p.Asset})
	}
	w := req.Wallet()
	switch {
	case w.Muxed():
		if p.Counterparty != w.Account || p.Muxed == "" || p.MuxedID != strconv.FormatUint(w.MuxedID, 10) {
			out = append(out, DailyDifference{Field: "walletAddress", Here: w.Address, Chain: chainWallet(p)})
		}
	case p.Counterparty != req.WalletAddress || p.Muxed != "":
		out = append(out, DailyDifference{Field: "walletAddress", Here: req.WalletAddress, Chain: chainWallet(p)})
	}
	if req.Memo != p.Memo {
		out = append(out, DailyDifference{Field: "memo", Here: memoText(req.Memo), Chain: memoText(p.Memo)})
	}
	return out
}

func chainWallet(p transfer.ChainPayment) string {
	if p.Muxed != "" {
		return p.Muxed
	}
	return p.Counterparty
}

func memoText(m transfer.Memo) string {
	if m.IsZero() {
		return "none"
	}
	return string(m.Type) + ":" + logging.Redact(m.Value)
}

func u32(v uint32) string { return strconv.FormatUint(uint64(v), 10) }

// stroopsText is an amount of stroops in units, as the API writes amounts ("12.5").
func stroopsText(v int64) string {
	neg := v < 0
	if neg {
		v = -v
	}
	s := strconv.FormatInt(v/transfer.StroopsPerUnit, 10)
	if f := v % transfer.StroopsPerUnit; f != 0 {
		s += "." + strings.TrimRight(strconv.FormatInt(f+transfer.StroopsPerUnit, 10)[1:], "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// itemOfRecord is rec as a report lists it; texts a client wrote are redacted (itemOf).
func itemOfRecord(rec transfer.Record) DailyItem {
	v := itemOf(rec)
	it := DailyItem{StoreKey: v.StoreKey, IdempotencyKey: v.IdempotencyKey, Status: v.Status, OperationType: v.OperationType,
		WalletAddress: v.WalletAddress, Amount: v.Amount, Asset: v.Asset, Memo: v.Memo, TransactionHash: v.TransactionHash,
		Ledger: v.Ledger, Forced: rec.Audit != nil && rec.Audit.Forced}
	if rec.Status != transfer.StatusInDoubt && rec.Status != transfer.StatusInFlight && rec.Status != transfer.StatusQueued {
		it.SettledAt = rec.UpdatedAt
	}
	return it
}

// dailyKeyHint says where a report too large to log is read.
func dailyKeyHint(day string) string {
	return `the whole report: {"action":"report","day":"` + day + `"}`
}
