package transfer

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// A vault that cannot pay a whole batch pays what it can (doc.go, "Batches", "Checking the
// destinations"): the keys it covers are built into the batch again, the others are queued
// again as the whole batch would have been.

// prepareBatch builds the envelope paying held (a batch's keys, taken under a's lease, in order)
// through BatchLedger.PrepareBatch, and returns it with the keys it pays, operation i paying
// keys[i]. When the vault cannot pay an asset's payments in full (*BatchShortfallError), the
// batch is built again from the keys the vault covers (coverable) and every other key is answered
// here, in answers, queued again with nothing built for it:
//
//   - a key the vault could pay alone but not beside the keys before it: as the whole batch's
//     keys are when the vault cannot pay it (requeueEach with the shortfall, its Retry-After,
//     each key's run counted on transfer_orchestration_failure_total), one page for all of them;
//   - a key the vault cannot pay even alone: as one transfer whose Prepare the vault refused
//     (its own VAULT_UNDERFUNDED naming its amount, its own page, queued again).
//
// Fewer than 2 keys covered returns no envelope and no error: the caller runs the one left
// alone (none: nothing to run). Errors are PrepareBatch's, for the keys returned (the batch
// built again may be refused too, if the vault's balance fell meanwhile: that refusal is the
// whole batch's, never split again).
func (o *Orchestrator) prepareBatch(ctx context.Context, a *attempt, held []Record, answers map[string]Answer) (Envelope, []Record, error) {
	env, err := o.prepareBatchOf(a, held)
	var short *BatchShortfallError
	if !errors.As(err, &short) || short.Err == nil {
		return env, held, err
	}
	covered, rest, beyond := coverable(held, short.Available)
	o.log().WarnContext(ctx, "the vault cannot pay a whole batch; paying the keys it covers", "keys", len(held),
		"covered", len(covered), "requeued", len(rest), "beyondTheVault", len(beyond), "err", short.Err)
	if len(rest) > 0 {
		o.pageUnderfunded(ctx, rest[0], short.Err.Code, fmt.Sprintf("a batch of %d refused before sending: %v; the %d keys it covers are paid, %d wait for funds",
			len(held), short.Err, len(covered), len(rest)))
		o.requeueEach(ctx, rest, short.Err, answers)
	}
	for _, rec := range beyond {
		why := beyondVault(rec, short)
		o.pageUnderfunded(ctx, rec, why.Code, "refused before sending: "+why.Error())
		o.requeueEach(ctx, []Record{rec}, why, answers)
	}
	if len(covered) < 2 {
		return Envelope{}, covered, nil
	}
	env, err = o.prepareBatchOf(a, covered)
	return env, covered, err
}

// prepareBatchOf is BatchLedger.PrepareBatch of held's requests, through the breaker, under a's
// budget; the batch's minTime is derived from held's claims, in order (BatchMinTime).
func (o *Orchestrator) prepareBatchOf(a *attempt, held []Record) (Envelope, error) {
	reqs := make([]Request, len(held))
	claims := make([]string, len(held))
	for i, rec := range held {
		reqs[i], claims[i] = rec.Request, rec.ClaimID
	}
	var env Envelope
	err := o.Breaker.Do(func() error {
		var err error
		env, err = o.Batches.PrepareBatch(a.net, reqs, Terms{MaxTime: o.maxTime(a), MinTime: BatchMinTime(claims)})
		return err
	})
	return env, err
}

// coverable splits held, a batch's keys in order, by avail, what the vault can pay of each asset
// (stroops, keyed by Request.Asset; an asset missing pays nothing): covered, each key whose
// amount fits what is left of its asset once the covered keys before it are paid; rest, the
// keys that fit alone but not in what is left; beyond, the keys whose amount alone is above
// avail.
//
// Why this rule: the batch's order is its messages' (FormBatches keeps it), so walking it pays
// the keys in the order their transfers were queued, as far as the balance goes, and a key never
// waits behind a later one. Taking every key that still fits, rather than stopping at the first
// that does not, lets one large withdrawal hold up no smaller one after it (it waits for funds
// either way). The rule reads nothing but the batch and one balance per asset, so every builder of
// the same batch from the same read splits it the same way; choosing the subset that spends the
// most is a knapsack problem, and paying the smallest first would let small withdrawals starve a
// large one for as long as the vault stays short.
func coverable(held []Record, avail map[string]int64) (covered, rest, beyond []Record) {
	left := make(map[string]int64, len(avail))
	for asset, n := range avail {
		left[asset] = n
	}
	for _, rec := range held {
		asset, n := rec.Request.Asset, rec.Request.Stroops
		switch {
		case n > avail[asset]:
			beyond = append(beyond, rec)
		case n > left[asset]:
			rest = append(rest, rec)
		default:
			left[asset] -= n
			covered = append(covered, rec)
		}
	}
	return covered, rest, beyond
}

// beyondVault is the refusal of rec, a batched key whose amount alone is above what the vault can
// pay of its asset (short.Available): VAULT_UNDERFUNDED with the shortfall's Retry-After, as one
// transfer's Prepare refuses it (internal/stellar's checkFunds), naming this key's amount.
func beyondVault(rec Record, short *BatchShortfallError) *UnavailableError {
	req := rec.Request
	return &UnavailableError{Code: short.Err.Code, RetryAfter: short.Err.RetryAfter,
		Detail: fmt.Sprintf("the vault holds %s %s available, below the %s to pay; nothing was submitted: retry with the same key once the vault is funded and holds an authorized trustline for the asset",
			stroopsText(short.Available[req.Asset]), req.Asset, stroopsText(req.Stroops))}
}

// stroopsText is n stroops as a decimal amount of units, 7 decimals (internal/stellar's
// amountText, which words one transfer's refusal).
func stroopsText(n int64) string {
	var b strings.Builder
	if n < 0 {
		b.WriteByte('-')
		n = -n
	}
	fmt.Fprintf(&b, "%d.%07d", n/StroopsPerUnit, n%StroopsPerUnit)
	return b.String()
}
