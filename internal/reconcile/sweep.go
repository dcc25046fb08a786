package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// SweepCounts says what the sweep did with one kind of item.
type SweepCounts struct {
	// Checked items were judged from the ledger.
	Checked int `json:"checked"`
	// Landed became replayable; Failed became rejected (included and FAILED); Released were
	// deleted because nothing can land; ParkedInDoubt are expired claims with an envelope the
	// ledger cannot judge yet, now in_doubt (alerted, swept again).
	Landed        int `json:"landed"`
	Failed        int `json:"failed"`
	Released      int `json:"released"`
	ParkedInDoubt int `json:"parkedInDoubt"`
	// Requeued: async items for which nothing can land, queued again and their message sent.
	Requeued int `json:"requeued,omitempty"`
	// Unresolved: the ledger proves nothing yet; the item is unchanged.
	Unresolved int `json:"unresolved"`
	// Changed: another caller settled or changed the item first (or the index was behind).
	Changed int `json:"changed"`
	// Errors: the store or the ledger failed for the item (logged; the next sweep retries).
	Errors int `json:"errors"`
}

// SweepAnswer is sweep's answer.
type SweepAnswer struct {
	Action        string      `json:"action"`
	InDoubt       SweepCounts `json:"inDoubt"`
	ExpiredClaims SweepCounts `json:"expiredClaims"`
	// Queued: queued items older than the grace, whose message the sweep sent again (or, without
	// a queue, counted as stranded).
	Queued QueuedCounts `json:"queued"`
	// InDoubtRemaining is the in-doubt index's count after the sweep (the gauge's value).
	InDoubtRemaining int `json:"inDoubtRemaining"`
	// Partial: the invocation's deadline came before every item was judged.
	Partial bool `json:"partial"`
	// DurationMS is how long the sweep took, in milliseconds.
	DurationMS int64 `json:"durationMs"`
}

// QueuedCounts says what the sweep did with queued items older than Config.QueuedGrace.
type QueuedCounts struct {
	// Sent: the message was sent again (the item's queued time restarted first).
	Sent int `json:"sent"`
	// Changed: the item changed or was taken before the sweep wrote it.
	Changed int `json:"changed"`
	// Errors: the store or the queue failed for the item (logged; the next sweep retries).
	Errors int `json:"errors"`
	// Stranded: with no queue (QUEUE_URL empty), queued items older than the grace, which
	// nothing will send: counted, logged at ERROR and published (Config.Stranded), not changed.
	Stranded int `json:"stranded,omitempty"`
}

// sweepPage is the page size of the sweep's index reads; sweepMargin is kept free before the
// invocation's deadline to answer; maxSweepPages bounds one sweep (100,000 items).
const (
	sweepPage     = 100
	sweepMargin   = 3 * time.Second
	maxSweepPages = 1000
)

// Sweep runs Config.Watch, then sends again the messages of queued items older than the grace
// (sweepQueued; without a queue, counts them: countStranded), then settles every in-doubt item
// and every expired in-flight claim that the ledger can judge (Settle, conditional on each item's status and version, so it is safe
// alongside retries and operators), then publishes the in-doubt gauge, whatever its value: the
// schedule runs it every minute, so the gauge's absence means the sweep failed or stopped, and
// its alarm treats missing data as breaching (README.md, "Monitoring"). Each item is read again before it is judged: the
// index is eventually consistent. A failure on one item is counted and logged, and the sweep goes
// on; only a failure to read the index is an error (STORE_UNAVAILABLE). It stops early, Partial,
// when the invocation's deadline is near.
func (s *Service) Sweep(ctx context.Context) (*SweepAnswer, error) {
	start := time.Now()
	out := &SweepAnswer{Action: ActionSweep}
	if s.cfg.Watch != nil {
		wctx, cancel := context.WithTimeout(ctx, WatchTimeout)
		s.cfg.Watch(wctx)
		cancel()
	}
	queuedPartial, err := s.queuedPhase(ctx, &out.Queued)
	if err != nil {
		return nil, err
	}
	list := func(ctx context.Context, cursor string) ([]transfer.Record, string, error) {
		return s.cfg.Store.ListInDoubt(ctx, sweepPage, cursor)
	}
	if err := s.sweepIndex(ctx, list, &out.InDoubt, &out.Partial); err != nil {
		return nil, err
	}
	now := s.cfg.Clock.Now()
	claims := func(ctx context.Context, cursor string) ([]transfer.Record, string, error) {
		return s.cfg.Store.ListExpiredClaims(ctx, now, sweepPage, cursor)
	}
	if !out.Partial {
		if err := s.sweepIndex(ctx, claims, &out.ExpiredClaims, &out.Partial); err != nil {
			return nil, err
		}
	}
	out.Partial = out.Partial || queuedPartial
	n, err := countInDoubt(ctx, s.cfg.Store)
	if err != nil {
		return nil, storeErr(err)
	}
	out.InDoubtRemaining = n
	s.cfg.Gauge.InDoubtGauge(ctx, n)
	out.DurationMS = time.Since(start).Milliseconds()
	s.cfg.Logger.InfoContext(ctx, "sweep done", "inDoubt", out.InDoubt, "expiredClaims", out.ExpiredClaims,
		"queued", out.Queued, "inDoubtRemaining", n, "partial", out.Partial, "durationMs", out.DurationMS)
	return out, nil
}

// queuedPhase sends the messages of queued items older than the grace again (sweepQueued) or,
// without a queue, counts them (countStranded). It runs before the in-doubt items and expired
// claims are judged: each queued item costs a read, a write and a send, at most once per grace
// (its queued time restarts), while an in-doubt item the ledger cannot judge yet is judged again
// (a lookup) on every sweep; last, a standing backlog of those could use up every sweep, and an
// accepted transfer whose message was dead-lettered would never be sent again. It gets at most
// half of the time left, so that a queue that fails slowly or hangs cannot use up every sweep
// either; partial says it stopped early. A failure to read the index is an error only while that
// time lasts.
func (s *Service) queuedPhase(ctx context.Context, c *QueuedCounts) (partial bool, err error) {
	if s.cfg.Queued == nil {
		return false, nil
	}
	qctx, cancel := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		qctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)/2))
	}
	defer cancel()
	if s.cfg.Queue != nil {
		err = s.sweepQueued(qctx, c, &partial)
	} else {
		err = s.countStranded(qctx, c, &partial)
	}
	if err != nil && qctx.Err() != nil && ctx.Err() == nil {
		return true, nil // its share of the time ended while it read the index
	}
	return partial, err
}

type lister func(ctx context.Context, cursor string) ([]transfer.Record, string, error)

func (s *Service) sweepIndex(ctx context.Context, list lister, c *SweepCounts, partial *bool) error {
	return walkIndex(ctx, list, partial, func(listed transfer.Record) { s.sweepOne(ctx, listed, c) })
}

// walkIndex calls each for every item list gives, page after page, up to maxSweepPages pages;
// it stops early, setting *partial, when the invocation's deadline is near or pages remain.
func walkIndex(ctx context.Context, list lister, partial *bool, each func(listed transfer.Record)) error {
	cursor := ""
	for range maxSweepPages {
		recs, next, err := list(ctx, cursor)
		if err != nil {
			return storeErr(err)
		}
		for _, listed := range recs {
			if nearDeadline(ctx) {
				*partial = true
				return nil
			}
			each(listed)
		}
		if next == "" {
			return nil
		}
		cursor = next
	}
	*partial = true
	return nil
}

func (s *Service) sweepOne(ctx context.Context, listed transfer.Record, c *SweepCounts) {
	rec, err := s.cfg.Store.Get(ctx, listed.StoreKey)
	switch {
	case errors.Is(err, transfer.ErrNotFound):
		c.Changed++
		return
	case err != nil:
		c.Errors++
		s.cfg.Logger.WarnContext(ctx, "sweep: reading the item failed", "storeKey", listed.StoreKey, "err", err)
		return
	case rec.Status != listed.Status:
		c.Changed++
		return
	}
	c.Checked++
	st, err := s.cfg.Settler.Settle(ctx, rec)
	switch {
	case errors.Is(err, transfer.ErrConditionFailed):
		c.Changed++
		return
	case err != nil:
		c.Errors++
		s.cfg.Logger.WarnContext(ctx, "sweep: settling the item failed", "storeKey", rec.StoreKey, "err", err)
		return
	}
	switch st.Resolution {
	case transfer.ResolvedLanded:
		c.Landed++
	case transfer.ResolvedFailed:
		c.Failed++
	case transfer.ResolvedReleased:
		c.Released++
	case transfer.ResolvedInDoubt:
		c.ParkedInDoubt++
	case transfer.ResolvedRequeued:
		c.Requeued++
		s.sendRequeued(ctx, st)
	default:
		c.Unresolved++
		return
	}
	s.cfg.Logger.InfoContext(ctx, "sweep settled an item", "storeKey", rec.StoreKey, "from", string(rec.Status), "resolution", string(st.Resolution))
}

func nearDeadline(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < sweepMargin
}

// countInDoubt counts the in-doubt index page by page (at most 100,000 items).
func countInDoubt(ctx context.Context, store Store) (int, error) {
	n, cursor := 0, ""
	for range maxSweepPages {
		recs, next, err := store.ListInDoubt(ctx, sweepPage, cursor)
		if err != nil {
			return 0, err
		}
		n += len(recs)
		if next == "" {
			break
		}
		cursor = next
	}
	return n, nil
}

// sweepQueued sends the message again for every queued item queued more than QueuedGrace ago,
// oldest first: an item whose message was never sent (the API died between its claim and its
// send), was lost, or went to the dead-letter queue. Each item is read again, and its queued time
// restarted with a conditional write on the item as read (so each item is sent at most once per
// grace, and never after the submitter took it), before its message is sent.
func (s *Service) sweepQueued(ctx context.Context, c *QueuedCounts, partial *bool) error {
	_, list := s.queuedBeforeGrace()
	return walkIndex(ctx, list, partial, func(listed transfer.Record) { s.resendQueued(ctx, listed, c) })
}

// countStranded counts the queued items queued more than QueuedGrace ago when the sweep has no
// queue (QUEUE_URL empty: README.md, "Configuration"): their message was never sent, was lost or
// dead-lettered, or QUEUE_URL was removed while they waited, and nothing will send them. They
// are left alone (only a queue can run them, and a client's GET keeps answering pending), but
// never silently: one ERROR line per sweep with the count, and the count to Config.Stranded. The
// count is the index's (eventually consistent; no item is read again): it is a report, not a
// write's condition.
func (s *Service) countStranded(ctx context.Context, c *QueuedCounts, partial *bool) error {
	before, list := s.queuedBeforeGrace()
	if err := walkIndex(ctx, list, partial, func(transfer.Record) { c.Stranded++ }); err != nil {
		return err
	}
	if c.Stranded == 0 {
		return nil
	}
	s.cfg.Logger.ErrorContext(ctx, "sweep: queued transfers stranded: no queue (QUEUE_URL is empty) will send them",
		"stranded", c.Stranded, "queuedBefore", before, "partial", *partial)
	if s.cfg.Stranded != nil {
		s.cfg.Stranded.QueuedStrandedGauge(ctx, c.Stranded)
	}
	return nil
}

// queuedBeforeGrace is the time before which a queued item has waited longer than QueuedGrace
// (DefaultQueuedGrace when unset), and the lister of the queued index's items queued before it:
// what the sweep resends, or without a queue counts as stranded.
func (s *Service) queuedBeforeGrace() (time.Time, lister) {
	grace := s.cfg.QueuedGrace
	if grace <= 0 {
		grace = DefaultQueuedGrace
	}
	before := s.cfg.Clock.Now().Add(-grace)
	return before, func(ctx context.Context, cursor string) ([]transfer.Record, string, error) {
		return s.cfg.Queued.ListQueued(ctx, before, sweepPage, cursor)
	}
}

func (s *Service) resendQueued(ctx context.Context, listed transfer.Record, c *QueuedCounts) {
	rec, err := s.cfg.Store.Get(ctx, listed.StoreKey)
	switch {
	case errors.Is(err, transfer.ErrNotFound):
		c.Changed++
		return
	case err != nil:
		c.Errors++
		s.cfg.Logger.WarnContext(ctx, "sweep: reading the queued item failed", "storeKey", listed.StoreKey, "err", err)
		return
	case rec.Status != transfer.StatusQueued || rec.ClaimID != listed.ClaimID || rec.Version != listed.Version:
		c.Changed++
		return
	}
	next := rec
	next.Version++
	next.UpdatedAt = s.cfg.Clock.Now()
	if err := transfer.ReplaceItem(ctx, s.cfg.Store, rec, next); err != nil {
		if errors.Is(err, transfer.ErrConditionFailed) {
			c.Changed++
			return
		}
		c.Errors++
		s.cfg.Logger.WarnContext(ctx, "sweep: restarting the queued item failed", "storeKey", rec.StoreKey, "err", err)
		return
	}
	if !s.send(ctx, next) {
		c.Errors++
		return
	}
	c.Sent++
	s.cfg.Logger.InfoContext(ctx, "sweep sent a queued transfer again", "storeKey", rec.StoreKey, "queuedAt", rec.UpdatedAt)
}

// send sends rec's message (a queued item); a failure is logged and the next sweep sends it once
// its grace has passed again.
func (s *Service) send(ctx context.Context, rec transfer.Record) bool {
	if s.cfg.Queue == nil {
		return false
	}
	if err := s.cfg.Queue.Send(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}); err != nil {
		s.cfg.Logger.WarnContext(ctx, "sweep: sending the queued transfer failed", "storeKey", rec.StoreKey, "err", err)
		return false
	}
	return true
}

// sendRequeued sends the message of the item st requeued, held back for its RequeueDelay (a
// failure on the service's side waits its Retry-After: transfer.SendRequeued); a failure is
// logged and the next sweep sends it once its grace has passed.
func (s *Service) sendRequeued(ctx context.Context, st transfer.Settlement) bool {
	if s.cfg.Queue == nil {
		return false
	}
	if err := transfer.SendRequeued(ctx, s.cfg.Queue, st); err != nil {
		s.cfg.Logger.WarnContext(ctx, "sweep: sending the requeued transfer failed", "storeKey", st.Record.StoreKey,
			"sendAfter", transfer.RequeueDelay(st), "err", err)
		return false
	}
	return true
}
