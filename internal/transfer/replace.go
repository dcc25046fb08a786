package transfer

import (
	"context"
	"errors"
	"slices"
)

// Replace-by-fee: a fee bump that the market outbids is wrapped again, around the same signed
// inner transaction, at stellar-core's replacement rate (README.md, "Fees under congestion").
//
// The inner hash stays the transfer's identity and every proof is about the inner transaction:
// all the fee bumps around it share its sequence number and its maxTime (a fee bump has no time
// bounds of its own), so at most one of them can ever apply, each outer hash finds the one that
// did, and the proof of death (inner maxTime passed, nothing found, history or sequence number
// corroborating) covers them all. What replacement adds is one rule of the item: every outer hash
// is written to it (Envelope.OuterHashes, a conditional write) before its envelope is sent, so a
// take-over, the sweep, an operator and the alert know every hash that may land.

// ReplaceAfterLedgers is how many ledgers a fee bump may close without being included before it
// is replaced (counted from the latest ledger at its first send to the latest ledger a lookup
// saw). stellar-core evicts and bans a queued transaction TRANSACTION_QUEUE_TIMEOUT_LEDGERS (4)
// closes after it was queued (src/herder/TransactionQueue.cpp, TransactionQueue::shift), and a
// replacement keeps that age (TransactionQueue::tryAdd: the age is the source account's,
// AccountState.mAge), so a replacement after 2 ledgers is a candidate for the 2 ledgers the first
// still had; after 3 it would have 1, and RPC shows a ledger 1-3 s after it closes, so a 3rd
// ledger's news can arrive after the 4th has begun nominating. After 1 it would replace envelopes
// that merely arrived late for the next ledger. Waiting for the eviction is worse: an evicted
// envelope is banned for TRANSACTION_QUEUE_BAN_LEDGERS (10) closes, so re-sending it is refused
// TRY_AGAIN_LATER until well past the budget, and the transfer waits for maxTime. A replacement
// has its own hash, which no ban names: after an eviction it enters the free slot as a new
// transaction.
const ReplaceAfterLedgers = 2

// ErrNoReplacement is returned (wrapped) by Replacer.Replace when replacing would not help or is
// not possible: the envelope is not a fee bump (the vault is its only source: its fee is signed
// into the transaction itself), the lane is not surge priced now (the envelope waits for
// another reason: a re-send, not a higher bid, is the answer), or no other party outbid it (the
// ledger's bids at or above its rate were the deployment's own: a replacement would only outbid
// them in turn).
var ErrNoReplacement = errors.New("transfer: no replacement by fee")

// Replacer is a Ledger that can replace a queued fee bump by fee. The orchestrator uses it when
// its Ledger implements it.
type Replacer interface {
	// Replace returns env wrapped again: the same signed inner transaction (InnerHash, MaxTime,
	// Channel unchanged) in a new fee bump whose rate per operation slot is at least
	// stellar-core's FEE_MULTIPLIER (10) times env's (canReplaceByFee), so the network takes it in
	// place of env while env is queued; XDR, OuterHash and FeeStroops are the new envelope's.
	// OuterHashes and SubmittedLedger are left to the caller. Nothing is sent.
	//
	// Errors: ErrNoReplacement (wrapped); *UnavailableError FEE_ABOVE_CAP when the replacement
	// rate does not fit MAX_FEE_STROOPS; FEE_ACCOUNT_UNDERFUNDED when the fee account cannot fund
	// the replacement on top of its other queued fees; SIGNING_KEYS_UNAVAILABLE; a plain error when the fee
	// stats or the latest ledger cannot be read. env can still land whatever the error.
	Replace(ctx context.Context, env Envelope) (Envelope, error)
}

// StepReplacing is the Hooks step before a replacement's outer hash is written to the item: the
// replacement is built and signed, not yet recorded or sent.
const StepReplacing Step = "replacing"

// replacement is the replace-by-fee state of one envelope's await in submit.
type replacement struct {
	r Replacer
	// firstSentAt is the latest ledger at the first send of the current outer envelope (0: not
	// sent yet in this call).
	firstSentAt uint32
	// triedAt is the latest ledger of the last attempt that built nothing, so one is made per
	// ledger at most; done stops replacing for this call (the cap, or the store failed).
	triedAt uint32
	done    bool
	// queued is the last envelope of this transfer the network took into its queue (a send
	// answered PENDING or DUPLICATE): a replacement must outbid it, never a replacement the
	// network refused, which is not queued (bidding 10x a refused bid would soon pass the cap for
	// nothing). Nil until a send is taken.
	queued *Envelope
}

// taken records that the network queued env (a send answered PENDING or DUPLICATE).
func (p *replacement) taken(env Envelope) {
	if !p.done {
		p.queued = &env
	}
}

func (o *Orchestrator) newReplacement(env Envelope) *replacement {
	r, ok := o.Ledger.(Replacer)
	if !ok || !env.FeeBumped() {
		return &replacement{done: true}
	}
	return &replacement{r: r}
}

// due reports whether the current envelope, last seen NOT_FOUND with latest the latest ledger,
// has waited ReplaceAfterLedgers since its first send.
func (p *replacement) due(latest uint32) bool {
	return !p.done && p.firstSentAt > 0 && latest >= p.firstSentAt+ReplaceAfterLedgers && latest > p.triedAt
}

// replaceByFee builds the replacement of rec's envelope and writes its outer hash to the item
// (ReplaceItem, conditional on rec as read). It returns the item as written and true when the
// replacement is to be sent; rec and false when it is not: the Ledger declined or failed (logged, and
// paged for a fee account that cannot fund the replacement; rec's envelope goes on waiting, and
// can still land), or the write failed. A write whose answer
// was lost is recognised by ReplaceItem's read-back (the item holds the new outer hash at the
// next version under this call's lease): sent. If the read-back fails too, the write's fate is
// unknown: the replacement is not sent (only an envelope whose hash is surely on the item may be),
// replacing stops for this call, and the item, whichever version it holds, names every envelope
// that was sent.
func (o *Orchestrator) replaceByFee(ctx context.Context, a *attempt, p *replacement, rec Record, latest uint32) (Record, bool, error) {
	cur := *rec.Envelope
	env, write, resend := o.nextFeeBump(ctx, a, p, rec, cur, latest)
	if !write {
		return rec, resend, nil
	}
	// An older fee bump of this item built again (the market fell back to a bid refused before,
	// the basis the same queued envelope) is named by the item already; it is still written as
	// the current envelope, so a take-over re-sends what was sent last.
	next := rec
	next.Envelope = &env
	next.Version++
	next.UpdatedAt = o.Clock.Now()
	if err := o.hook(ctx, StepReplacing, next); err != nil {
		return rec, false, err
	}
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		p.done = true
		o.log().WarnContext(ctx, "recording a replacement by fee failed; not sent, the envelope goes on waiting", "storeKey", rec.StoreKey,
			"innerHash", cur.InnerHash, "outerHash", env.OuterHash, "err", err)
		return rec, false, nil
	}
	p.firstSentAt = 0
	o.log().InfoContext(ctx, "replacing an outbid envelope by fee", "storeKey", rec.StoreKey, "innerHash", env.InnerHash,
		"replacedOuterHash", cur.OuterHash, "outerHash", env.OuterHash, "feeStroops", env.FeeStroops, "latestLedger", latest)
	return next, true, nil
}

// notReplaced is what a Replacer's err means for p, the replacement state of cur's await (rec the
// item it pages for): no replacement this ledger; none for the rest of the call when the
// replacement's fee is above the cap or the fee account cannot fund it (which pages, once for the
// call). cur goes on waiting either way, and can still land.
func (o *Orchestrator) notReplaced(ctx context.Context, p *replacement, rec Record, cur Envelope, latest uint32, err error) {
	p.triedAt = latest
	var u *UnavailableError
	switch {
	case errors.Is(err, ErrNoReplacement):
	case errors.As(err, &u) && u.Code == CodeFeeAboveCap:
		// Its rate is 10x the queued one's, which no later ledger lowers: this envelope will
		// not be replaced. It waits at its bid until included or evicted, and is then proven
		// dead after its maxTime like any other.
		p.done = true
		o.log().WarnContext(ctx, "not replacing an outbid envelope: the replacement's fee is above MAX_FEE_STROOPS", "storeKey", rec.StoreKey,
			"innerHash", cur.InnerHash, "outerHash", cur.OuterHash, "detail", u.Detail)
	case errors.As(err, &u) && u.Code == CodeFeeAccountUnderfunded:
		// The fee account cannot fund the replacement (the network would refuse it
		// txINSUFFICIENT_BALANCE): an operator has to act, so it pages, once for this call,
		// and replacing stops for it. The queued envelope can still land: it goes on waiting
		// and is settled from the ledger or proven dead after its maxTime; the client is
		// never answered from this refusal.
		p.done = true
		o.pageUnderfunded(ctx, rec, CodeFeeAccountUnderfunded, "not replacing an outbid envelope by fee: "+u.Detail)
	default:
		o.log().WarnContext(ctx, "building a replacement by fee failed; the envelope goes on waiting", "storeKey", rec.StoreKey, "innerHash", cur.InnerHash, "err", err)
	}
}

// StepReplacingBatch is the Hooks step before a batch's replacement is written to its batch item
// (ReplaceBatchItem): the replacement is built and signed, not yet recorded or sent. The hook's
// record is the key the await runs for (the submitter's first key, or the key taken over).
const StepReplacingBatch Step = "replacing a batch"

// replaceBatchByFee is replaceByFee for a batch's envelope: it builds the replacement of b's
// envelope (the same signed inner transaction, so the same sequence number and maxTime) and writes
// it to the batch item, conditional on b's version (ReplaceBatchItem), before it may be sent; the
// keys' items are not written: every judge reads the batch's hashes from the batch item
// (BatchOf). It returns the batch item as written and true when the replacement is to be sent.
// When the write lost its condition (another judge of a key of the batch replaced it first), it
// returns the batch item as read back and true, so the newest envelope, which the item names, is
// the one sent and looked up; replacing stops for this call. When the Ledger declined or failed, or
// the write's fate is unknown (its read-back failed too), it returns b and false: nothing new is
// sent, and the batch item, whichever version it holds, names every envelope that was sent. rec is
// the key the await runs for, paged for a fee account that cannot fund the replacement.
func (o *Orchestrator) replaceBatchByFee(ctx context.Context, a *attempt, p *replacement, bs BatchStore, b BatchEnvelope, rec Record, latest uint32) (BatchEnvelope, bool, error) {
	cur := b.Envelope
	env, write, resend := o.nextFeeBump(ctx, a, p, rec, cur, latest)
	if !write {
		return b, resend, nil
	}
	next := b
	next.Envelope = env
	next.Version++
	if err := o.hook(ctx, StepReplacingBatch, rec); err != nil {
		return b, false, err
	}
	if err := ReplaceBatchItem(ctx, bs, b, next); err != nil {
		p.done = true
		if errors.Is(err, ErrConditionFailed) {
			if got, gerr := bs.GetBatch(ctx, cur.InnerHash); gerr == nil && got.Version > b.Version && got.Envelope.InnerHash == cur.InnerHash {
				o.log().InfoContext(ctx, "a batch was replaced by fee by another judge; sending its newest envelope", "innerHash", cur.InnerHash, "outerHash", got.Envelope.OuterHash)
				return got, true, nil
			}
		}
		o.log().WarnContext(ctx, "recording a batch's replacement by fee failed; not sent, the envelope goes on waiting", "innerHash", cur.InnerHash,
			"outerHash", env.OuterHash, "err", err)
		return b, false, nil
	}
	p.firstSentAt = 0
	o.log().InfoContext(ctx, "replacing an outbid batch by fee", "innerHash", env.InnerHash, "operations", len(b.Ops),
		"replacedOuterHash", cur.OuterHash, "outerHash", env.OuterHash, "feeStroops", env.FeeStroops, "latestLedger", latest)
	return next, true, nil
}

// nextFeeBump builds the replacement of cur, the envelope the item (or the batch item) names
// now, outbidding the last one the network queued (p.queued) when it wraps the same inner
// transaction, and says what to do: write, a new fee bump around cur's inner transaction with
// cur's maxTime, submitted ledger and channel and every outer hash named (OuterHashes), to be
// recorded before it is sent; resend, the same fee bump as cur (the market and the basis
// unchanged since it was refused: its hash is recorded already), sent again as it is; neither,
// when the Ledger declined or failed (notReplaced) or built something the item cannot name
// (another inner transaction, or no outer hash: never sent, and replacing stops for this call).
// rec is the key the await runs for, named in the log and paged for a fee account that cannot
// fund the replacement.
func (o *Orchestrator) nextFeeBump(ctx context.Context, a *attempt, p *replacement, rec Record, cur Envelope, latest uint32) (env Envelope, write, resend bool) {
	basis := cur
	if p.queued != nil && p.queued.InnerHash == cur.InnerHash {
		basis = *p.queued
	}
	env, err := p.r.Replace(a.net, basis)
	if err != nil {
		o.notReplaced(ctx, p, rec, cur, latest, err)
		return Envelope{}, false, false
	}
	if env.InnerHash == cur.InnerHash && env.OuterHash == cur.OuterHash {
		p.firstSentAt = 0
		return Envelope{}, false, true
	}
	if env.InnerHash != cur.InnerHash || env.OuterHash == "" {
		p.done = true
		o.log().ErrorContext(ctx, "the ledger's replacement is not a new fee bump around the same inner transaction; not sent", "storeKey", rec.StoreKey, "innerHash", cur.InnerHash, "replacementInner", env.InnerHash)
		return Envelope{}, false, false
	}
	env.MaxTime, env.SubmittedLedger, env.Channel = cur.MaxTime, cur.SubmittedLedger, cur.Channel
	env.OuterHashes = cur.Outers()
	if !slices.Contains(env.OuterHashes, env.OuterHash) {
		env.OuterHashes = append(env.OuterHashes, env.OuterHash)
	}
	return env, true, false
}
