package transfer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The typed errors a call ends with, by what went wrong (doc.go, "Classification").

func failingCode(rec Record) string {
	if rec.Result != nil && rec.Result.Code != "" {
		return rec.Result.Code
	}
	return CodeInternalError
}

// sendFailure is the failing code for a send that may have reached the network: the network
// answered unexpectedly (SUBMISSION_FAILED), the call ran out of time (TRANSFER_TIMEOUT), or it
// failed some other way mid-submit, e.g. a socket error (INTERNAL_ERROR).
func sendFailure(err error) string {
	switch {
	case errors.Is(err, ErrUnexpectedAnswer):
		return CodeSubmissionFailed
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	default:
		return CodeInternalError
	}
}

// notSent reports whether a send failed before anything reached the network: the ledger says
// so, or the circuit breaker did not let the call through.
func notSent(err error) bool {
	var u *UnavailableError
	return errors.Is(err, ErrNotSent) || errors.As(err, &u) && u.Code == CodeCircuitOpen
}

// storeUnavailable is STORE_UNAVAILABLE for a write that failed where nothing of the request was
// sent and nothing can land: the key is free, or holds only this call's own envelope-less or
// proven-dead claim. Only then is "nothing was submitted" true.
func storeUnavailable(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Detail: "the idempotency store is unavailable; nothing was submitted", Err: err}
}

// storeUnavailableHeld is STORE_UNAVAILABLE where the key holds an item whose envelope may land
// (a take-over of an expired lease that could not be written): the client must not read it as
// "nothing moved", only as "retry with the same key".
func storeUnavailableHeld(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Err: err,
		Detail: "the idempotency store is unavailable; a transfer under this key may already be under way: retry with the same key to learn its outcome (it never runs twice)"}
}

// storeUnavailableUnknown is STORE_UNAVAILABLE for a claim that failed and whose key could not be
// read back: nothing of this call was sent, but the key may hold this request's earlier transfer
// (landed, accepted or in doubt), so only "retry with the same key" is true.
func storeUnavailableUnknown(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Err: err,
		Detail: "the idempotency store is unavailable and the key could not be read; a transfer under this key may already have been submitted: retry with the same key to learn its outcome (it never runs twice)"}
}

// storeUnreadable is STORE_UNAVAILABLE for a read (GET, history, a message's item) that failed:
// it says nothing of what was submitted.
func storeUnreadable(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Detail: "the idempotency store is unavailable; retry", Err: err}
}

// prepareFailure types an error from Ledger.Prepare: nothing was sent, so it is retryable unless
// the ledger typed it already (a validation error, a circuit open).
func prepareFailure(err error) error {
	var p ProblemError
	if errors.As(err, &p) {
		return err
	}
	return &UnavailableError{Code: CodeRPCError, Detail: "the transaction could not be prepared; nothing was submitted", Err: err}
}

// afterProvenDead rewords err's "nothing was submitted" when an envelope of this transfer was sent
// and then ended without moving anything (attempt.provenDead: proven dead or refused before
// inclusion, by this call, an invocation it took over from, an in-doubt item it reconciled, or
// another call of the same request it waited on, which may also have seen it land FAILED for a
// shortfall or an operator discard it): an envelope was submitted, and nothing moved. It applies
// to every answer of the call (Transfer), whichever step refused. A client reads "nothing was
// submitted" literally (README.md, "Problem types"), so it is said only where it is true.
func afterProvenDead(a *attempt, err error) error {
	var u *UnavailableError
	if !a.provenDead || !errors.As(err, &u) || !strings.Contains(u.Detail, nothingSubmitted) {
		return err
	}
	again := *u
	again.Detail = strings.Replace(u.Detail, nothingSubmitted,
		"nothing moved: an earlier envelope of this transfer ended without moving the funds, and no other was sent", 1)
	return &again
}

// nothingSubmitted is how an answer says no envelope of its request reached the network.
const nothingSubmitted = "nothing was submitted"

// refused is the answer to a first send of env the network refused before inclusion (nothing
// moved, the key is released): CHANNELS_BUSY with the ledger's Retry-After when the refusal says
// the transaction source's queue slot is taken (SendResult.SourceBusy); FEE_ACCOUNT_UNDERFUNDED
// (a fee bump) or VAULT_UNDERFUNDED (the vault pays its own fee) when the fee payer cannot pay
// the fee on top of the fees it has queued (ERROR txINSUFFICIENT_BALANCE: stellar-core's
// TransactionQueue::canAdd, or checkValid's fee check); SERVICE_SIDE_FAILURE, paging, when the
// refusal is the service's signing or accounts (serviceSideSendCodes); else RPC_ERROR.
func refused(res SendResult, env Envelope) *UnavailableError {
	if res.Status == SendTryAgainLater && res.SourceBusy > 0 {
		return &UnavailableError{Code: CodeChannelsBusy, RetryAfter: res.SourceBusy,
			Detail: "the transaction source account is busy with another transfer; nothing moved"}
	}
	if res.Status == SendError && res.Code == "txINSUFFICIENT_BALANCE" {
		if env.OuterHash != "" {
			return underfunded(CodeFeeAccountUnderfunded, "the fee account cannot pay the network fee on top of the fees it has queued (txINSUFFICIENT_BALANCE); nothing moved")
		}
		return underfunded(CodeVaultUnderfunded, "the vault cannot pay the network fee above its reserve (txINSUFFICIENT_BALANCE); nothing moved")
	}
	if res.Status == SendError && slices.Contains(serviceSideSendCodes, res.Code) {
		return underfunded(CodeServiceSideFailure, fmt.Sprintf("the transfer failed on the service's side, not the destination's: the network refused the transaction before inclusion (%s: its signatures or source account); nothing moved: retry with the same key once an operator has fixed the service's accounts or signing (the service is paged)", res.Code))
	}
	detail := "the network refused the transaction before inclusion; nothing moved"
	if res.Code != "" {
		detail = fmt.Sprintf("the network refused the transaction before inclusion (%s); nothing moved", res.Code)
	} else if res.Status == SendTryAgainLater {
		detail = "the network asked to try again later; nothing moved"
	}
	return &UnavailableError{Code: CodeRPCError, Detail: detail, RetryAfter: time.Second}
}

// sourceBusy reports whether err is CHANNELS_BUSY: no transaction source was free.
func sourceBusy(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u) && u.Code == CodeChannelsBusy
}

func expired() *UnavailableError {
	return &UnavailableError{Code: CodeTransactionExpired, Detail: "the transaction expired without landing; nothing moved", RetryAfter: time.Second}
}

// underfundedRetryAfter is the Retry-After of VAULT_UNDERFUNDED and FEE_ACCOUNT_UNDERFUNDED: an
// operator has to fund the account, which takes longer than a ledger.
const underfundedRetryAfter = time.Minute

func underfunded(code, detail string) *UnavailableError {
	return &UnavailableError{Code: code, Detail: detail, RetryAfter: underfundedRetryAfter}
}

// isUnderfunded reports whether err is VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED or
// SERVICE_SIDE_FAILURE: a new envelope would fail the same way until an operator acts.
func isUnderfunded(err error) bool { return underfundedCode(err) != "" }

// underfundedCode is err's code if it is VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED or
// SERVICE_SIDE_FAILURE (each pages), else "".
func underfundedCode(err error) string {
	var u *UnavailableError
	if errors.As(err, &u) && (u.Code == CodeVaultUnderfunded || u.Code == CodeFeeAccountUnderfunded || u.Code == CodeServiceSideFailure) {
		return u.Code
	}
	return ""
}

// SourceShortfall judges a FAILED inclusion of env by its result codes (Lookup.ResultCodes:
// Horizon's spelling, a fee bump's inner codes; README.md, "When the ledger answers FAILED"). It
// returns the code of the retryable answer when the failure is the service's side (the paying side
// lacked funds, or the service's own accounts, signing or contract call failed) and its sequence
// number was consumed, and "" for a failure that is the destination's or the request's, which is
// stored as a terminal rejection (TRANSACTION_FAILED) with the ledger's codes:
//
//   - tx_failed with op_underfunded: the payment's source, the vault, lacks the asset:
//     VAULT_UNDERFUNDED. So with op_src_no_trust (the vault holds no trustline for the asset)
//     and op_src_not_authorized (the issuer has not authorized, or has frozen, the vault's
//     trustline): the vault cannot pay, nothing about the destination or the request is wrong,
//     and an operator has to act before any retry can pay.
//   - tx_insufficient_balance: the transaction's source was left below its reserve after the fees
//     were charged (stellar-core's TransactionFrame::commonValid at apply). Without a fee bump the
//     vault pays its own fee: VAULT_UNDERFUNDED; a fee bump's inner transaction is never judged so
//     (FeeBumpTransactionFrame::apply), but if it were, the fee account is the one to fund:
//     FEE_ACCOUNT_UNDERFUNDED.
//   - tx_failed with a destination-side code (DestinationSide: op_no_destination, op_no_trust,
//     op_not_authorized, op_line_full, op_no_issuer): "", the terminal rejection.
//   - tx_failed with any other operation code: SERVICE_SIDE_FAILURE. op_bad_auth (the vault's
//     signers or thresholds changed after the envelope was signed: TransactionFrame::
//     processSignatures, checkOperationSignatures), op_no_source_account (the vault account is
//     gone), op_malformed (the service built it), the contract mode's InvokeHostFunction codes
//     (op_resource_limit_exceeded, op_insufficient_refundable_fee, op_entry_archived come from
//     the service's simulation and fees; op_trapped names no side, and a retry simulates again,
//     which refuses a trap that lasts before anything is sent as a retryable 503 SIMULATION_ERROR
//     (VAULT_UNDERFUNDED for the vault contract's error #1 on a withdrawal: internal/stellar,
//     simulationError), never as a destination's rejection), and a code this list does not know:
//     no code proves the client at fault, and a terminal answer cannot be taken back.
//   - tx_bad_auth, tx_bad_auth_extra, tx_bad_minseq_age_or_gap, tx_bad_sponsorship: the
//     channel's or the vault's signing, rejected at apply after the sequence check:
//     SERVICE_SIDE_FAILURE. So is tx_internal_error: an operation threw while it applied
//     (TransactionFrame::applyOperations and parallelApply, reached only once commonPreApply
//     consumed the sequence number), which names no side and moved nothing.
//
// Every code above comes after stellar-core's sequence check at apply (TransactionFrame::
// commonPreApply runs processSeqNum once commonValid reached kInvalidUpdateSeqNum, before
// processSignatures and the operations), so the envelope's sequence number is consumed and the
// key may be released (releaseShortfall). Any other transaction-level code (tx_no_account,
// tx_bad_seq, tx_too_early, tx_too_late, tx_insufficient_fee, tx_malformed, ...) is set before
// that check (commonValidPreSeqNum, isBadSeq): nothing proves the envelope cannot apply later, so
// it is not released and returns "", stored as the rejection as before. A fee bump whose fee
// account was charged short is not a failure: its inner transaction still runs.
func SourceShortfall(env Envelope, lk Lookup) string {
	if lk.Status != LookupFailed || len(lk.ResultCodes) == 0 {
		return ""
	}
	switch tx := lk.ResultCodes[0]; {
	case tx == "tx_insufficient_balance":
		if env.OuterHash != "" {
			return CodeFeeAccountUnderfunded
		}
		return CodeVaultUnderfunded
	case slices.Contains(serviceSideTxCodes, tx):
		return CodeServiceSideFailure
	case tx == "tx_failed":
		return failedOperations(lk.ResultCodes[1:])
	}
	return ""
}

// failedOperations judges the operation codes of a tx_failed result: VAULT_UNDERFUNDED if any says
// the vault could not pay; else "" if any faults the destination or the request (clientSideOpCode);
// else
// SERVICE_SIDE_FAILURE (op_success beside no failing code, or none at all, included).
func failedOperations(ops []string) string {
	for _, op := range ops {
		if slices.Contains(vaultSideOpCodes, op) {
			return CodeVaultUnderfunded
		}
	}
	for _, op := range ops {
		if clientSideOpCode(op) {
			return ""
		}
	}
	return CodeServiceSideFailure
}

// clientSideOpCode reports whether code, one operation's result, faults the destination
// (DestinationSide) or the request (op_no_issuer: PAYMENT_NO_ISSUER, the asset's issuer account is
// missing): the only operation codes a FAILED inclusion stores as the key's terminal rejection.
func clientSideOpCode(code string) bool { return DestinationSide(code) || code == "op_no_issuer" }

// vaultSideOpCodes are the payment results (Horizon's spelling) that say its source, the vault,
// could not pay (stellar-core's Stellar-transaction.x, PaymentResultCode: PAYMENT_UNDERFUNDED "not
// enough funds in source account", PAYMENT_SRC_NO_TRUST "no trust line on source account",
// PAYMENT_SRC_NOT_AUTHORIZED "source not authorized to transfer").
var vaultSideOpCodes = []string{"op_underfunded", "op_src_no_trust", "op_src_not_authorized"}

// serviceSideTxCodes are the transaction-level results (Horizon's spelling, as internal/stellar's
// ResultCodes and Horizon's result_codes write them: txBAD_MIN_SEQ_AGE_OR_GAP is
// "tx_bad_minseq_age_or_gap") that stellar-core sets at apply after it consumed the sequence
// number, and that fault the service's signing or accounts, or no one: TransactionFrame::
// commonValid's txBAD_MIN_SEQ_AGE_OR_GAP and txBAD_AUTH (the transaction source's signatures
// below its threshold), processSignatures' txBAD_AUTH_EXTRA, applyOperations' txBAD_SPONSORSHIP,
// and the txINTERNAL_ERROR of applyOperations and parallelApply (an operation threw; its changes
// were not committed). internal/stellar's TestServiceSideFailureReleasesOnlyAfterSequenceConsumed
// holds this list against every code the SDK decodes.
var serviceSideTxCodes = []string{"tx_bad_auth", "tx_bad_auth_extra", "tx_bad_minseq_age_or_gap", "tx_bad_sponsorship", "tx_internal_error"}

// serviceSideSendCodes are the first-send refusals (stellar-core's spelling, as SendResult.Code
// carries them) that fault the service's own signing or accounts, as op_bad_auth and tx_bad_auth
// do once included: TransactionFrame::checkValid's txBAD_AUTH (the source's signatures below its
// threshold) and txBAD_AUTH_EXTRA (checkAllSignaturesUsed), commonValidPreSeqNum's txNO_ACCOUNT (the
// channel or the vault is missing), and txFAILED, which before inclusion only
// OperationFrame::checkValid's own checks give (opBAD_AUTH, opNO_ACCOUNT, a malformed operation the
// service built): none reads the destination.
var serviceSideSendCodes = []string{"txBAD_AUTH", "txBAD_AUTH_EXTRA", "txNO_ACCOUNT", "txFAILED"}
