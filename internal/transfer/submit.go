package transfer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// One envelope's life in a call: build and attach it, send it, await the ledger, and settle what
// the ledger says (doc.go, "The flow of one transfer").

// execute builds, records and submits a new envelope for a claimed item. freed reports that
// the key was released because nothing can land, so the caller may claim it again.
func (o *Orchestrator) execute(ctx context.Context, a *attempt, rec Record) (Outcome, bool, error) {
	if err := o.hook(ctx, StepClaimed, rec); err != nil {
		return Outcome{}, false, err
	}
	var env Envelope
	pctx, end := o.observer().StartStep(a.net, TracePrepare)
	err := o.Breaker.Do(func() error {
		var err error
		env, err = o.Ledger.Prepare(pctx, rec.Request, Terms{MaxTime: o.maxTime(a), MinTime: ClaimMinTime(rec.ClaimID)})
		return err
	})
	end(err)
	if code := underfundedCode(err); code != "" {
		o.pageUnderfunded(ctx, rec, code, "refused before sending: "+err.Error())
	}
	var refusal *ValidationError
	if err != nil && rec.Async && errors.As(err, &refusal) {
		// The client's mistake, which no run can change (queued.go, rejectQueued): an async item
		// is settled with it rather than requeued for ever.
		return Outcome{}, false, o.rejectQueued(ctx, a, rec, refusal)
	}
	if err != nil {
		// Nothing was sent: the key is free again. If the release failed, the claim (no envelope)
		// is this call's own leftover: it is deleted again before the answer, which tells the
		// client to retry (CHANNELS_BUSY says the key is free), or the retry would wait on it as on
		// another request until its lease ends.
		failure := afterProvenDead(a, prepareFailure(err))
		if rerr := o.releaseFor(ctx, rec, failure); rerr != nil {
			a.freed = rec.ClaimID
			return Outcome{}, false, o.freeOwnLeftover(ctx, a, failure)
		}
		return Outcome{}, false, failure
	}
	if err := o.hook(ctx, StepPrepared, rec); err != nil {
		return Outcome{}, false, err
	}
	next := rec
	next.Envelope = &env
	next.Version++
	next.UpdatedAt = o.Clock.Now()
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		// The envelope was never sent, so nothing can land from it whether or not the write
		// happened. If it did, a take-over will find the envelope and judge it from the ledger.
		o.release(ctx, rec)
		o.Ledger.Done(ctx, env)
		if isConflict(err) {
			// The claim changed under us: its lease ran out and another call took it over. That
			// call now holds the key; nothing of ours was sent.
			return Outcome{}, false, &InProgressError{RetryAfter: time.Second}
		}
		return Outcome{}, false, storeUnavailable(err)
	}
	if err := o.hook(ctx, StepAttached, next); err != nil {
		return Outcome{}, false, err
	}
	return o.submit(ctx, a, next, false)
}

// submit sends rec's envelope and awaits the ledger until the envelope lands, is proven dead, or
// the budget ends. maybeDelivered says an earlier send may have reached the network (a take-over
// or reconciliation), so no refusal can prove anything. The reads are timed by the ledger's
// cadence (await.go).
func (o *Orchestrator) submit(ctx context.Context, a *attempt, rec Record, maybeDelivered bool) (Outcome, bool, error) {
	env := *rec.Envelope
	failing := CodeTimeout
	needSend := true
	w := o.newLedgerWait()
	// sentAt is the latest ledger when the envelope was last sent: the send's answer's, or, when
	// that names none (0), the first look-up's after it; 0 until one is known.
	var sentAt uint32
	// resendNow: a look-up found the envelope still pending two ledgers after the send, and the
	// re-send goes out at once; afterResend: the loop turn after it, which has nothing new to read.
	resendNow, afterResend := false, false
	rbf := o.newReplacement(env)
	for {
		if !o.Clock.Now().Before(a.deadline) {
			break
		}
		if needSend {
			// Only a send of an envelope that cannot be on the network yet says where to start
			// looking: a re-send, or a taken-over envelope's, may come long after it landed, so
			// those are looked up at once and then ledger by ledger.
			first := !maybeDelivered
			res, err := o.send(a.net, env)
			if herr := o.hook(ctx, StepSent, rec); herr != nil {
				return Outcome{}, false, herr
			}
			needSend = false
			w.sent(res, err, first, o.Clock.Now())
			if err == nil {
				sentAt = res.LatestLedger
				if rbf.firstSentAt == 0 {
					rbf.firstSentAt = res.LatestLedger
				}
			}
			switch {
			case err == nil && res.Status == SendIncluded && res.Included != nil:
				return o.onLookup(ctx, a, rec, *res.Included)
			case err == nil && RefusedBeforeInclusion(res, maybeDelivered):
				refusal := refused(res, env)
				o.releaseFor(ctx, rec, refusal)
				o.Ledger.Done(ctx, env)
				if isUnderfunded(refusal) {
					o.pageUnderfunded(ctx, rec, refusal.Code, "the network refused the first send: "+res.Code)
				}
				return Outcome{}, true, refusal
			case err == nil:
				// PENDING or DUPLICATE, or a refusal of a re-send, which proves nothing.
				maybeDelivered = true
				if res.Status == SendPending || res.Status == SendDuplicate {
					rbf.taken(env)
				}
			case notSent(err):
				needSend = true
			default:
				// The request may have been written: from here on the envelope may be on the network.
				maybeDelivered = true
				needSend = true
				failing = sendFailure(err)
				o.log().WarnContext(ctx, "send failed; will re-send the same envelope", "storeKey", rec.StoreKey, "innerHash", env.InnerHash, "err", err)
			}
		}
		// A send that failed waits its backoff before the next (needSend is still set only then):
		// a look-up calling for a re-send does not hurry it.
		sendFailed := needSend
		// Right after a re-send that followed a look-up, the ledgers read are the look-up's: the
		// wait sleeps before it reads again.
		skipDue := afterResend
		afterResend = false
		if maybeDelivered && !skipDue && o.due(a, w) {
			a.lookups++
			lk, err := o.lookup(a.net, env)
			w.looked(lk, err, o.Clock.Now())
			if err == nil {
				switch {
				case lk.Status == LookupSuccess || lk.Status == LookupFailed:
					return o.onLookup(ctx, a, rec, lk)
				case ProvenDead(env, lk):
					o.release(ctx, rec)
					o.Ledger.Done(ctx, env)
					return Outcome{}, true, expired()
				}
				// Outbid for ReplaceAfterLedgers: wrap the same inner transaction again at the
				// replacement rate, its outer hash on the item before it is sent (replace.go).
				if rbf.due(lk.LatestLedger) {
					next, ok, herr := o.replaceByFee(ctx, a, rbf, rec, lk.LatestLedger)
					if herr != nil {
						return Outcome{}, false, herr
					}
					if ok {
						rec, env = next, *next.Envelope
						needSend = true
					}
				}
				if sentAt == 0 {
					// The send's answer named no ledger (Horizon's root unread after it): the two
					// ledgers count from the first look-up after the send, not from ledger 0.
					sentAt = lk.LatestLedger
				}
				// Still pending two ledgers after the send: re-send the same envelope, in case a
				// node dropped it. Same hash, same sequence number: it can land at most once. At
				// once, not after the sleep to the next ledger's visibility: sent then, it would hold up
				// that ledger's read by a round trip, and at 1 s ledgers shown 1 to 3 s after they
				// close two in three transfers re-send (the envelope's ledger is seldom the first
				// after the latest shown at the send).
				if lk.LatestLedger >= sentAt+2 {
					needSend, resendNow = true, !sendFailed
				}
			}
		}
		if resendNow {
			resendNow, afterResend = false, true
			continue
		}
		if needSend && !maybeDelivered {
			// A send that provably never left: try again soon.
			if err := o.sleep(ctx, a, w.tight()); err != nil {
				break
			}
			continue
		}
		if err := o.sleep(ctx, a, w.next(o.Clock.Now())); err != nil {
			break
		}
	}
	if !maybeDelivered {
		// Every send failed before reaching the network: nothing can land.
		o.release(ctx, rec)
		o.Ledger.Done(ctx, env)
		return Outcome{}, false, &UnavailableError{Code: CodeNetworkUnavailable, Detail: "the Stellar network could not be reached; nothing was submitted"}
	}
	return Outcome{}, false, o.settleInDoubt(ctx, a, rec, failing)
}

// onLookup settles an envelope the ledger has included.
func (o *Orchestrator) onLookup(ctx context.Context, a *attempt, rec Record, lk Lookup) (Outcome, bool, error) {
	if err := o.hook(ctx, StepSettling, rec); err != nil {
		return Outcome{}, false, err
	}
	env := *rec.Envelope
	if code := SourceShortfall(env, lk); code != "" {
		return Outcome{}, true, o.releaseShortfall(ctx, rec, lk, code)
	}
	next := settled(rec, lk, o.Clock.Now(), a.settings.KeyTTL)
	sctx, end := o.observer().StartStep(ctx, TraceSettle)
	err := ReplaceItem(sctx, o.Store, rec, next)
	end(err)
	if err != nil {
		// The ledger has spoken; the caller gets the truth. The item stays in_flight with its
		// envelope until a take-over or the sweep settles it from the same ledger facts.
		o.log().ErrorContext(ctx, "settle failed after the ledger decided", "storeKey", rec.StoreKey, "innerHash", env.InnerHash, "status", string(lk.Status), "err", err)
	}
	o.Ledger.Done(ctx, env)
	if lk.Status == LookupSuccess {
		return Outcome{TransactionHash: env.InnerHash, Ledger: lk.Ledger}, false, nil
	}
	return Outcome{}, false, storedRejection(next)
}

// releaseShortfall frees the key of rec, whose envelope the ledger included FAILED on the service's
// side (SourceShortfall gave code: the paying side lacked funds, or the service's accounts, signing
// or contract call failed), pages, and returns the retryable answer.
//
// Releasing after a FAILED inclusion is safe because nothing can land under that envelope ever
// again (doc.go, "Proof rules": a new envelope only once the previous one is proven dead): the
// failure came after stellar-core's sequence check (op_underfunded and every other operation code
// in applyOperations, op_bad_auth and txBAD_AUTH_EXTRA in processSignatures, txBAD_AUTH and
// txINSUFFICIENT_BALANCE in TransactionFrame::commonValid once it reached kInvalidUpdateSeqNum),
// so
// TransactionFrame::processSeqNum consumed the envelope's sequence number, and a transaction
// applies at most once: its source's sequence number is now at or past the envelope's, which
// every later submission of the same hash fails (txBAD_SEQ). Nothing moved: a FAILED
// transaction's operations are rolled back, only the fee was charged. The write is the release of
// doc.go, "The item" and "Incarnations": conditional on the incarnation, status, version, lease
// owner and inner hash as read (free -> DeleteItem(Expect(rec)); an async item is requeued).
func (o *Orchestrator) releaseShortfall(ctx context.Context, rec Record, lk Lookup, code string) error {
	env := *rec.Envelope
	answer := shortfallAnswer(code, lk)
	if err := o.releaseFor(ctx, rec, answer); err != nil {
		o.log().WarnContext(ctx, "releasing the key after a source-side failure failed; its lease will expire", "storeKey", rec.StoreKey, "err", err)
	}
	o.Ledger.Done(ctx, env)
	o.pageUnderfunded(ctx, rec, code, fmt.Sprintf("included FAILED in ledger %d %v", lk.Ledger, lk.ResultCodes))
	return answer
}

// shortfallAnswer is the retryable answer to a call whose envelope the ledger included FAILED
// on the service's side (SourceShortfall gave code: the paying side could not pay, or the
// service's own accounts, signing or contract call failed), once its key is free.
func shortfallAnswer(code string, lk Lookup) *UnavailableError {
	who, until := "the vault cannot pay", "the vault is funded and holds an authorized trustline for the asset"
	switch code {
	case CodeFeeAccountUnderfunded:
		who, until = "the fee account lacks the funds", "the fee account is funded"
	case CodeServiceSideFailure:
		who, until = "the transfer failed on the service's side, not the destination's", "an operator has fixed the service's accounts or signing (the service is paged)"
	}
	return underfunded(code, fmt.Sprintf("%s: the transaction was included in ledger %d and failed (%s); nothing moved and it can never land: retry with the same key once %s",
		who, lk.Ledger, strings.Join(lk.ResultCodes, ", "), until))
}

// Alert names of the pages for an account that cannot pay (README.md, "Operating it").
const (
	AlertVaultUnderfunded      = "vault-underfunded"
	AlertFeeAccountUnderfunded = "fee-account-underfunded"
	AlertServiceSideFailure    = "service-side-failure"
)

// pageUnderfunded writes the ERROR line that pages when the vault or the fee account could not
// pay for rec (code VAULT_UNDERFUNDED or FEE_ACCOUNT_UNDERFUNDED), or its transaction failed on the
// service's side (SERVICE_SIDE_FAILURE); why says what the ledger
// answered. The call's Report carries the code into transfer_orchestration_failure_total, which
// the template's alarm watches.
func (o *Orchestrator) pageUnderfunded(ctx context.Context, rec Record, code, why string) {
	alert := AlertVaultUnderfunded
	switch code {
	case CodeFeeAccountUnderfunded:
		alert = AlertFeeAccountUnderfunded
	case CodeServiceSideFailure:
		alert = AlertServiceSideFailure
	}
	attrs := []any{"alert", alert, "code", code, "why", why, "storeKey", rec.StoreKey,
		"walletAddress", rec.Request.WalletAddress, "operationType", string(rec.Request.OperationType),
		"amount", rec.Request.Amount, "asset", rec.Request.Asset, "idempotencyKey", rec.ClientKey, "traceId", rec.TraceID}
	if rec.Envelope != nil {
		attrs = append(attrs, "innerHash", rec.Envelope.InnerHash, "outerHash", rec.Envelope.OuterHash, "outerHashes", rec.Envelope.Outers())
	}
	msg := "an account cannot pay for transfers; fund it"
	if code == CodeServiceSideFailure {
		msg = "a transfer failed on chain on the service's side (its accounts, signers or contract call); fix it"
	}
	o.log().ErrorContext(ctx, msg, attrs...)
}

// settled is rec after the ledger included its envelope: replayable on SUCCESS, rejected on
// FAILED. The signed XDR is dropped (it can never land again) and the TTL starts.
func settled(rec Record, lk Lookup, now time.Time, ttl time.Duration) Record {
	next := rec
	env := *rec.Envelope
	env.XDR = ""
	next.Envelope = &env
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	next.Version++
	next.UpdatedAt = now
	next.ExpiresAt = now.Add(ttl).Unix()
	if lk.Status == LookupSuccess {
		next.Status = StatusReplayable
		next.Result = &Result{TransactionHash: env.InnerHash, Ledger: lk.Ledger, FeeChargedStroops: lk.FeeChargedStroops}
		return next
	}
	next.Status = StatusRejected
	next.Result = &Result{
		TransactionHash: env.InnerHash, Ledger: lk.Ledger, Code: CodeTransactionFailed,
		Detail:      fmt.Sprintf("the transaction was included in ledger %d and failed", lk.Ledger),
		ResultCodes: lk.ResultCodes, FeeChargedStroops: lk.FeeChargedStroops,
	}
	return next
}

// settleInDoubt parks rec as in_doubt and returns the error every caller will see.
func (o *Orchestrator) settleInDoubt(ctx context.Context, a *attempt, rec Record, failing string) error {
	if err := o.hook(ctx, StepSettling, rec); err != nil {
		return err
	}
	next := InDoubtRecord(rec, failing, o.Clock.Now())
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		o.log().ErrorContext(ctx, "writing in_doubt failed; the expired lease will be taken over", "storeKey", rec.StoreKey, "err", err)
	}
	// The page comes from the alert function, which sees every in_doubt item on the table's stream;
	// this line carries no "alert" field so that one transfer pages once.
	o.log().WarnContext(ctx, "transfer in doubt", "storeKey", rec.StoreKey,
		"walletAddress", rec.Request.WalletAddress, "operationType", string(rec.Request.OperationType),
		"amount", rec.Request.Amount, "asset", rec.Request.Asset, "failingCode", failing,
		"idempotencyKey", rec.ClientKey, "traceId", rec.TraceID, "innerHash", rec.Envelope.InnerHash, "outerHashes", rec.Envelope.Outers())
	return &InDoubtError{FailingCode: failing, RetryAfter: o.inDoubtRetryAfter(a, *rec.Envelope)}
}

// inDoubtRetryAfter is when a retry may find the envelope provable: after maxTime and the next
// ledger close.
func (o *Orchestrator) inDoubtRetryAfter(a *attempt, env Envelope) time.Duration {
	d := time.Unix(env.MaxTime, 0).Sub(o.Clock.Now()) + a.settings.ProofWindow
	if d < time.Second {
		d = a.settings.ProofWindow
	}
	return d.Round(time.Second)
}

func (o *Orchestrator) send(ctx context.Context, env Envelope) (SendResult, error) {
	var res SendResult
	ctx, end := o.observer().StartStep(ctx, TraceSend)
	defer func() { end(nil) }()
	err := o.Breaker.Do(func() error {
		var err error
		res, err = o.Ledger.Send(ctx, env)
		return err
	})
	return res, err
}

func (o *Orchestrator) lookup(ctx context.Context, env Envelope) (Lookup, error) {
	var lk Lookup
	ctx, end := o.observer().StartStep(ctx, TraceAwait)
	defer func() { end(nil) }()
	err := o.Breaker.Do(func() error {
		var err error
		lk, err = o.Ledger.Lookup(ctx, env)
		return err
	})
	return lk, err
}

// release deletes an in_flight item this call owns, once nothing can land for it (an async item is
// requeued instead: free). A failure is logged (and returned): the lease will expire and a
// take-over will judge the item from the ledger.
func (o *Orchestrator) release(ctx context.Context, rec Record) error {
	return o.releaseFor(ctx, rec, nil)
}

// releaseFor is release for a call answered why: an async item whose answer pages is requeued
// held back for its Retry-After (RequeuedAfter).
func (o *Orchestrator) releaseFor(ctx context.Context, rec Record, why error) error {
	_, err := o.freeFor(ctx, rec, why)
	if err != nil {
		o.log().WarnContext(ctx, "releasing the key failed; its lease will expire", "storeKey", rec.StoreKey, "err", err)
	}
	return err
}
