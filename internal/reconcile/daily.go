package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"time"

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
// operator settles it. So the table's side is every lasting record settled from the day on, up to
// the invocation's day and at most DailyLookAhead days after it, every item in doubt now and every
// expired claim: each explains the chain payments whose hash is one of its envelope's, whatever
// day it settled (and from the day before, for a clock behind the ledger's). A record settled as
// paid is expected on chain on the day of its ledger (transfer.Result.Ledger). The look-ahead
// covers RPC's history: its default 120,960 ledgers are 7 days at 5 s a ledger, more at a slower
// pace, and an operator may keep more. A batch's key is set against its own operation. A live
// item settled whose record was never written (the stream's batch lost after its retries) is not
// read: its payment shows as unexplained, never as matched.
//
// What it reports, each list sorted and clipped to DailyListMax entries (its count exact):
//   - absentOnChain: a transfer settled as paid whose ledger is in the day's range and whose
//     transaction is not among the day's transactions;
//   - failedOnChain: the same, found FAILED;
//   - mismatched: found, but what moved differs from the transfer (direction, amount, asset,
//     destination and its muxed id, memo, ledger, recorded hash);
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
//   - unverified: records settled on the day as paid without a ledger (a forced resolution), or
//     released by a forced discard, whose transaction is not in the day (listed, not counted: the
//     ledger could not prove it when it was forced).
//
// A transfer is set against the payment of its transaction that is exactly what it asked for, a
// batch's key against its own operation; the hash it recorded must be one that landed. A run
// again of a stored day lists what the earlier runs said (Supersedes).
//
// Discrepancies is the sum of the counted lists and the assets whose actual movement differs;
// any discrepancy logs the report at WARN, writes the metric and publishes the event with ok false.

// DailyLookAhead is how many days after the reported day the lasting records are read, at most:
// a day is reported again as long as RPC's history holds it (120,960 ledgers by default: 7 days at
// 5 s a ledger, more at a slower pace, and an operator may keep more), and a transfer in doubt may settle
// days after it landed. The bound keeps a run for a day long past (a typo's year) to that many
// reads of the lasting record.
const DailyLookAhead = 92

// DailyListMax clips each list of a report; the counts are exact. Eight lists of 40 entries of
// under 700 bytes keep a report within a CloudWatch Logs event (256 KB) and a stored item
// (dynamo.MaxDailyReport).
const DailyListMax = 40

// DailyMaxBytes bounds a report's JSON: under the store's bound (dynamo.MaxDailyReport, 350,000
// bytes, within DynamoDB's 400 KB item). Forty entries a list fit in it unless the entries are
// the longest a transfer can make (255-character keys, muxed wallets, memos of 28 control
// characters, each escaped to six); encodeReport then clips the lists further.
const DailyMaxBytes = 300_000

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
	// Supersedes are the earlier runs of the same day whose stored reports this one replaced,
	// oldest first (at most DailyListMax, the latest kept): a run again never erases what an
	// earlier one told (a page, the matches it counted). Empty for a day's first report.
	Supersedes []DailyRun `json:"supersedes,omitempty"`
	// ListMax is how many entries each list was clipped to: DailyListMax, or fewer when the
	// report would not fit DailyMaxBytes otherwise.
	ListMax int `json:"listMax"`
}

// DailyRun is what an earlier stored report of the day said: when it was made and its outcome.
type DailyRun struct {
	GeneratedAt   time.Time   `json:"generatedAt"`
	OK            bool        `json:"ok"`
	Discrepancies int         `json:"discrepancies"`
	Matched       int         `json:"matched"`
	Counts        DailyCounts `json:"counts"`
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
	if err := wholeDay(chain, start, partial); err != nil {
		return nil, ledgerErr(err)
	}
	side, err := s.tableSide(readCtx, start, now)
	if err != nil {
		return nil, err
	}
	report := buildReport(start, now, chain, side)
	report.Partial = partial
	if !partial {
		if report.Supersedes, err = supersedes(ctx, d.Reports, start); err != nil {
			return nil, err
		}
	}
	body, err := encodeReport(report)
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
	// The alarm says whether the latest day balances: a run of an older day writes the metric only
	// when it found something (it pages), never a clean 0 that would clear the page of a later day
	// still unresolved. The day before now's (the schedule's) writes it whatever it found.
	if latest, _ := dayOf("", now, false); d.Gauge != nil && (report.Discrepancies > 0 || !start.Before(latest)) {
		d.Gauge.DailyDiscrepancies(ctx, report.Discrepancies)
	}
	if d.Publish != nil {
		if err := d.Publish(ctx, report.Summary()); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "daily reconciliation event not published", "day", report.Day, "err", err)
		}
	}
	return report, nil
}

// supersedes are the runs of day stored before this one, oldest first: the stored report's own
// list and the stored report itself, the latest DailyListMax kept. A stored report that cannot be
// read is an error: replacing it unread would erase what it said.
func supersedes(ctx context.Context, reports ReportStore, day time.Time) ([]DailyRun, error) {
	b, err := reports.GetDailyReport(ctx, day)
	if errors.Is(err, transfer.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, storeErr(err)
	}
	var old DailyReport
	if err := json.Unmarshal(b, &old); err != nil {
		return nil, &Error{Code: CodeStoreUnavailable, Message: "the report stored for " + day.Format(time.DateOnly) + " cannot be read; it is not replaced", Err: err}
	}
	runs := append(old.Supersedes, DailyRun{GeneratedAt: old.GeneratedAt, OK: old.OK, Discrepancies: old.Discrepancies, Matched: old.Matched, Counts: old.Counts})
	return runs[max(0, len(runs)-DailyListMax):], nil
}

// tableSide is what the table holds that can explain the day's chain.
type tableSide struct {
	// records: the lasting records settled from the day on, one per incarnation.
	records []transfer.Record
	// live: the items in doubt now; unsettled: the expired claims and the queued items queued
	// before the day's end.
	live, unsettled []transfer.Record
}

// tableSide reads the records settled from the day before start's through now's day, at most
// DailyLookAhead days after start's, the in-doubt items, the expired claims and the queued items.
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
		archived, err := allPages(func(cursor string) ([]transfer.Archive, string, error) {
			return s.cfg.Daily.Archives.ListArchivedDay(ctx, day, 0, cursor)
		})
		if err != nil {
			return side, err
		}
		for _, a := range archived {
			id := a.Record.StoreKey + "#" + a.Record.ClaimID
			if !seen[id] {
				seen[id] = true
				side.records = append(side.records, a.Record)
			}
		}
	}
	var err error
	if side.live, err = allPages(func(cursor string) ([]transfer.Record, string, error) {
		return s.cfg.Store.ListInDoubt(ctx, MaxListLimit, cursor)
	}); err != nil {
		return side, err
	}
	if side.unsettled, err = allPages(func(cursor string) ([]transfer.Record, string, error) {
		return s.cfg.Store.ListExpiredClaims(ctx, now, MaxListLimit, cursor)
	}); err != nil {
		return side, err
	}
	if s.cfg.Queued != nil {
		queued, err := allPages(func(cursor string) ([]transfer.Record, string, error) {
			return s.cfg.Queued.ListQueued(ctx, start.Add(24*time.Hour), MaxListLimit, cursor)
		})
		if err != nil {
			return side, err
		}
		side.unsettled = append(side.unsettled, queued...)
	}
	return side, nil
}

// allPages calls list from the first page ("") with each next cursor until one answers none,
// and returns every page's items in order; a store error is the daily report's storeErr.
func allPages[T any](list func(cursor string) ([]T, string, error)) ([]T, error) {
	var all []T
	cursor := ""
	for {
		page, next, err := list(cursor)
		if err != nil {
			return nil, storeErr(err)
		}
		all = append(all, page...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// dailyKeyHint says where a report too large to log is read.
func dailyKeyHint(day string) string {
	return `the whole report: {"action":"report","day":"` + day + `"}`
}
