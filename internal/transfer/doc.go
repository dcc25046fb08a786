// Package transfer is the domain of the Stellar Transfer Orchestrator: what a transfer request is,
// how it is canonicalised and keyed, the typed errors a caller sees, how failures are classified,
// and the Orchestrator that moves money at most once per (wallet, idempotency key).
//
// The package depends only on interfaces it declares itself (Store, ArchiveStore, Ledger, Clock,
// AddressParser);
// it imports no AWS or Stellar package. The promise it keeps is README.md's "What the service
// guarantees"; the HTTP answers it leads to are README.md's "The HTTP API" and "Problem types".
// Below: the item and its writes, the flow of one call, the proof rules and how the network's
// answers are classified.
//
// # The item
//
// A transfer is one item of the store under StoreKey(wallet, clientKey), wallet being the
// request's Wallet().Scope() (the G... account of a muxed wallet; "Muxed wallets" below):
// "transfer:<first 16 hex of sha256(upper(wallet))>:<clientKey>" (Record; the table's layout is
// internal/dynamo/doc.go, "Table layout"). Its Status is one of:
//
//   - in_flight: claimed by the invocation named by LeaseOwner until LeaseExpiresAt (the
//     invocation's deadline). Once it holds an Envelope, the signed XDR, inner (and outer) hash,
//     maxTime and the ledger seen before the first send are on the item before anything is sent.
//   - replayable: the envelope landed with SUCCESS; Result holds the hash and ledger, every call
//     replays it.
//   - rejected: the envelope landed and FAILED (fee charged); Result holds TRANSACTION_FAILED and
//     the result codes, every call replays it. An async item whose request Ledger.Prepare refused
//     as the client's mistake (a 4xx ValidationError) is rejected too, with no envelope and that
//     problem (queued.go, rejectQueued): a synchronous call answers it and frees the key instead.
//   - in_doubt: the envelope may or may not land; Result holds the failing code, every caller gets
//     409 TRANSFER_IN_DOUBT until the ledger settles it.
//   - queued: an asynchronous transfer (Prefer: respond-async; queued.go) waits for the submitter:
//     no lease, no envelope, nothing built or sent. Record.Async marks every item of such a
//     transfer, whatever its status.
//   - cancelled: a queued item cancelled before any submitter took it (cancel.go): no lease, no
//     envelope, Audit names who cancelled it and when. Nothing was built or sent and nothing
//     ever will be: no write leads out of it (a submitter's message finds it and does nothing),
//     and every call with its key answers the cancellation until its TTL: a POST of the same
//     request 409 TRANSFER_CANCELLED, because the key's state, not the request, stands in the way
//     (RFC 9110 section 15.5.10); never a 2xx, which a client could read as accepted or paid, nor
//     a 422, since the same request under a new key is fine. A DELETE again answers the same
//     cancellation (Idempotent-Replayed), never 409, so a cancel whose answer was lost is sent
//     again safely.
//
// replayable and rejected items drop the signed XDR (it can never land again) and, as cancelled
// items do, expire after Settings.KeyTTL (ExpiresAt, epoch seconds; expiry is judged by Record.Expired, since DynamoDB's
// TTL deletes days late). queued, in_flight and in_doubt items never expire (the store refuses a
// TTL on them). A key with no item, or only an expired one, is free.
//
// Every change is one conditional write:
//
//   - claim (Store.Claim): write a new in_flight item, Version 1, a fresh ClaimID, if the key is
//     free, with its charges of the daily limits in the same atomic write ("Limits"). A lost claim
//     returns the item that holds the key.
//   - attach: the claim's item gains its Envelope, before the first send.
//   - replace by fee: an in_flight item's fee bump, outbid for ReplaceAfterLedgers, is wrapped
//     again around the same inner transaction: the new XDR and outer hash (added to
//     Envelope.OuterHashes) are on the item before the new envelope is sent (replace.go). The
//     inner hash, maxTime and submitted ledger do not change, so neither do the proofs.
//   - settle: in_flight -> replayable or rejected, from the ledger's SUCCESS or FAILED.
//   - in_doubt: in_flight -> in_doubt when the budget ends with the envelope undecided
//     (InDoubtRecord).
//   - release (Store.Delete): the item is deleted, only when nothing can land: the envelope was
//     never sent, was refused on its first send, is proven dead, or was included FAILED on the
//     service's side (it landed, FAILED, with only the fee charged: releaseShortfall). The next
//     claim starts afresh.
//   - take over: an in_flight item whose lease expired (its invocation died) gets the new caller
//     as lease owner. Without an envelope the transfer runs again; with one, the same envelope is
//     re-sent and judged, never rebuilt (takeover.go).
//   - resolve: an in_doubt item (or an expired claim) is settled or released from the ledger by a
//     retry (inline), the sweep or an operator (Settle; internal/reconcile).
//   - queue (Enqueue): the claim of an asynchronous transfer writes a queued item (Version 1, a
//     fresh ClaimID, Async) instead of an in_flight one; its message names the key and ClaimID.
//   - take (RunQueued): queued -> in_flight under the submitter's lease; then as after a claim.
//   - cancel (Cancel): queued -> cancelled, on the queued item exactly as read, so of a cancel
//     and a take of the same queued state exactly one applies. Only a queued item holds nothing
//     that can land (no envelope: never built, or proven dead before its requeue), which is why
//     nothing else can be cancelled; both stores refuse a cancelled item written on any other
//     condition.
//   - requeue (Requeued): where an async item would be released (nothing can land), it becomes
//     queued again instead: the same ClaimID, the next Version, no lease, no envelope. It is never
//     deleted, so its Version keeps rising and (ClaimID, Version) still names one state of it; a
//     new envelope is built only by its next run, under the same proof rules as after a release.
//     A requeue whose answer pages (a failure on the paying or the service's side:
//     VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED, SERVICE_SIDE_FAILURE; included FAILED, refused
//     on the first send, or refused by Prepare) is held back (RequeuedAfter): NotBefore (epoch
//     seconds) is that answer's Retry-After away (rounded down to the second), and Result keeps
//     the answer's code and detail.
//     Until then nothing takes it: every message that finds it is put back for the time left
//     (RunQueued, RunQueuedBatch: DeliveryRetry, whose Backoff never shortens it), whichever path
//     delivered it (the item's own, back after a taking call's lease; a copy; the sweep's), and a
//     synchronous call with its key is answered that failure with the time left (HeldAnswer:
//     "nothing moved" where its run said "nothing was submitted", as an earlier run of the
//     transfer may have sent an envelope), never a wait or a new envelope. The hold is read with
//     the item and every take is conditional on the item as read (Expect: its Version, which the
//     held requeue raised), so no take of a state read before NotBefore applies; the take and a
//     cancel clear it. A batch's keys are held back alike when a Prepare or a first send refuses
//     the batch for such a failure (requeueEach, RequeueRefusedAfter). Only a queued item holds
//     NotBefore, and a queued item holds a Result only with it (both stores refuse anything
//     else); an item written without it runs at once.
//
// Every write after the claim goes through ReplaceItem or DeleteItem, conditional on the item
// exactly as its writer read it (Expect; see "Incarnations"). Every write carries the whole
// record, its Request and CreatedAt included, so the item keeps its place in its wallet's history
// (History, keyed by WalletHash; history.go) from the claim to its deletion.
//
// # The flow of one transfer
//
//	Orchestrator.Transfer(ctx, Input)          (internal/api: key + body -> Rules.Canonicalize -> here)
//	  admission  -> no source free within the wait (Admission): read the key (no claim)
//	                free: 503 CHANNELS_BUSY, nothing written; an item: as a claim lost to it
//	  claim won  -> Ledger.Prepare (source, sequence number, build, sign, fee bump)
//	             -> attach -> Ledger.Send -> Ledger.Lookup until the ledger decides or the budget ends
//	             -> settle (replayable | rejected), in_doubt, or release (then claim again)
//	  claim lost -> another fingerprint: 409 IDEMPOTENCY_KEY_CONFLICT
//	                replayable / rejected: replay; cancelled: 409 TRANSFER_CANCELLED
//	                in_flight: wait for its holder (coalesce.go), or take over an expired lease
//	                in_doubt: settle it inline from the ledger (inline.go), else 409 TRANSFER_IN_DOUBT
//
// The admission (Orchestrator.Admission; internal/stellar's ledgers' Admit, on the channel
// calendar) decides before the claim what Prepare's source would, when it can tell: whether a
// channel will be free within the wait (on a pool it last found with room it leaves that to
// Prepare, so a replay books no slot). When none will, a claim would only be released again, so the key is read
// instead (one consistent GetItem): a free key (no item, or an expired one) is answered
// CHANNELS_BUSY with the admission's Retry-After, and nothing is written; an item is answered as a
// claim that lost to it (a replay from the item, a conflict, a wait for its holder, a take-over,
// an in-doubt settlement), since none of these needs a source. A read that fails decides nothing:
// the call claims as without the admission. A request Prepare would refuse before asking for a
// source (the client's mistake) is left to Prepare, so it gets its own refusal, never a busy
// answer to retry. So a busy answer still means what it says (no source in time, the key free,
// nothing submitted), and no write is left to free.
//
// The call's budget is min(Settings.Timeout, the invocation's deadline - Settings.DeadlineMargin);
// the Stellar calls stop at deadline - DeadlineMargin, keeping that margin for the final writes.
// The envelope's maxTime is Settings.ProofWindow before the end of the budget, so an envelope
// still pending then is proven dead by a ledger that closes within the call; never closer than
// Settings.MinValidity to now, since stellar-core refuses as txTOO_LATE an envelope whose maxTime
// is within its upper-bound close-time offset (about two ledger intervals; internal/stellarsim's
// doc, "Modelled"). A pending envelope is re-sent, the same one, two ledgers after its last send.
// When an envelope is proven dead and enough budget is left (MinValidity + ProofWindow) the call
// claims the key again and builds a new one.
//
// # Proof rules
//
// A new envelope may be built for a key only once the previous one is proven dead (proof.go):
//
//   - RefusedBeforeInclusion: the network refused it (TRY_AGAIN_LATER, or ERROR with a
//     transaction-level code) on a send that no earlier send could have preceded. Once a send's
//     answer was lost, or a take-over or reconciliation re-sends, no refusal proves anything: an
//     included envelope is answered TRY_AGAIN_LATER or txBAD_SEQ too. This assumes nothing
//     between the service and the node re-sends a POST by itself.
//
//   - ProvenDead: its hashes (the inner one and every outer one) are NOT_FOUND, a ledger whose close time is after its maxTime had
//     closed before the search began (Lookup.LatestLedger), and either the search's history
//     reaches back to the ledger seen before the first send, or its source account's sequence
//     number, read at or after that ledger, is still below the envelope's. Never the local clock.
//
//   - An inclusion FAILED after stellar-core's sequence check (op_underfunded,
//     tx_insufficient_balance, any operation failure): its sequence number is consumed and a
//     transaction applies at most once, so nothing can land under it again. It is stored as a
//     rejection, or, when the failure is the service's side (SourceShortfall: the paying side
//     lacked funds, or the service's accounts, signing or contract call failed), its key is
//     released (releaseShortfall). A transaction-level code set before the sequence check
//     (tx_no_account, tx_bad_seq, tx_too_late, ...) consumes nothing and proves nothing: it is
//     stored as the rejection.
//
// Which RPC and Horizon deployments can give each corroboration is README.md's "Which RPC and
// Horizon deployments the proof supports". Anything else that may have reached the network is
// indeterminate.
//
// # Classification
//
// What each answer means for the call (failures.go, submit.go; the codes are README.md's
// "Problem types"). Each typed error says its code, its Classification and its Kind (errors.go:
// malformed, unacceptable, conflict, unavailable, rejected, not found); the package carries no
// protocol's status. The statuses named below are what internal/api answers, which maps each
// Kind to one (internal/api/status.go):
//
//   - Prepare fails: nothing was sent, the key is released; the Ledger's typed error is returned
//     (422 for what it cannot do, 503 CHANNELS_BUSY, SIMULATION_ERROR, RESTORE_REQUIRED,
//     SIGNING_KEYS_UNAVAILABLE, FEE_ABOVE_CAP, and VAULT_UNDERFUNDED or FEE_ACCOUNT_UNDERFUNDED
//     when the paying side's balance, read before sending, cannot pay: these page as a FAILED
//     shortfall does), any other error as 503 RPC_ERROR. A typed 503 is
//     answered at once, not retried within the call: FEE_ABOVE_CAP says the network's fee is
//     above the cap now, which a rebuild within the same second cannot change.
//   - Send answers PENDING or DUPLICATE: await the ledger.
//   - Send answers TRY_AGAIN_LATER or ERROR with a code on a first send: released, 503 RPC_ERROR
//     (CHANNELS_BUSY when SendResult.SourceBusy says the source's queue slot is taken;
//     FEE_ACCOUNT_UNDERFUNDED or VAULT_UNDERFUNDED, paging, for txINSUFFICIENT_BALANCE: the fee
//     payer cannot pay this fee on top of those it has queued; SERVICE_SIDE_FAILURE, paging, for
//     txBAD_AUTH, txBAD_AUTH_EXTRA, txNO_ACCOUNT and txFAILED: the service's signing or accounts,
//     answered at once; an async item is requeued held back for the Retry-After, and a call that
//     waited on it answers the stored failure, HeldAnswer: the refusal left nothing on the ledger
//     for heldShortfall to find. A synchronous holder's key is deleted, so its waiter cannot tell
//     such a refusal from one a new envelope mends, a busy source: it builds again, and is refused
//     and paged the same way, paying no fee). On a re-send: nothing is proven,
//     await the ledger.
//   - Send fails with ErrNotSent (or the breaker is open): nothing reached the network; send again. If no send
//     ever left, the key is released: 503 NETWORK_UNAVAILABLE.
//   - Send fails any other way (timeout, EOF after the request was written, HTTP 5xx,
//     ErrUnexpectedAnswer): the envelope may be on the network; the same envelope is re-sent.
//   - Lookup SUCCESS: replayable, 200. FAILED on the destination's or the request's side
//     (op_no_trust, op_not_authorized, op_line_full, op_no_destination, op_no_issuer), or with a
//     transaction-level code set before the sequence check: rejected, 422 TRANSACTION_FAILED.
//     FAILED because the paying side could not pay (SourceShortfall: op_underfunded,
//     op_src_no_trust, op_src_not_authorized, tx_insufficient_balance): released, 503
//     VAULT_UNDERFUNDED or FEE_ACCOUNT_UNDERFUNDED; FAILED on the service's own side (op_bad_auth,
//     op_no_source_account, tx_bad_auth, tx_bad_auth_extra, tx_bad_minseq_age_or_gap,
//     tx_bad_sponsorship, tx_internal_error, the contract call's codes, any operation code not
//     listed): released, 503 SERVICE_SIDE_FAILURE; both page (an ERROR line with "alert");
//     no new envelope in the same call, nor in a retry that settles it inline, nor in a call
//     that waited on it (heldShortfall: it answers the same 503); an async item is requeued held
//     back for the failure's Retry-After (NotBefore: "The item", requeue), so no message of it
//     runs before then whatever path delivers it (its own, after RunQueued's Backoff or a taking
//     call's lease; RequeueDelay's for the inline, sweep and discard requeues). Safe because the included
//     envelope's sequence number is consumed and it can never apply again (releaseShortfall).
//   - Lookup NOT_FOUND and ProvenDead: released, 503 TRANSACTION_EXPIRED (or a new envelope).
//   - The budget ends with the envelope undecided: in_doubt, 409 TRANSFER_IN_DOUBT with the
//     failing code (TRANSFER_TIMEOUT, SUBMISSION_FAILED, INTERNAL_ERROR; LEASE_EXPIRED for a
//     dead invocation's claim). Unknown failures default to indeterminate.
//   - The store fails before anything was sent: 503 STORE_UNAVAILABLE.
//
// # Muxed wallets
//
// A wallet may be an M... muxed account (SEP-23): a G... account and a 64-bit id that the
// account's owner (an exchange, a custodian) reads to credit one of its customers. The network
// knows only the account: a muxed destination pays the G... account's balance, and the id travels
// with the operation (stellar-core PaymentOpFrame: toAccountID of the destination). Request keeps
// the M... address as WalletAddress (what the client named, what the envelope pays, what the
// fingerprint holds) with its Account and MuxedID, taken apart by the AddressParser
// (MuxedParser; the domain decodes no strkey itself).
//
// The idempotency key is scoped by the G... account (Wallet.Scope: StoreKey, the history index),
// not by the M... address. Why:
//
//   - A key names one payment to one ledger account. The M... addresses of one account are 2^64
//     names for one balance, minted freely; scoped by the M..., a client that retries a payout
//     with the same key but another id (a typo, a customer's address re-read) pays the account
//     twice. Scoped by the G..., the same key with another id or memo is a fingerprint conflict
//     (409), the same answer as any other change of the request.
//   - An exchange with many customers behind one G... is paid under one key space: a key names a
//     payout, not a customer. The cost falls on a client whose keys are unique only per customer
//     ("withdrawal-1" for each of them): its second customer at the same exchange is answered 409
//     IDEMPOTENCY_KEY_CONFLICT, never paid by mistake, and it must make its keys unique per payout
//     (its own payout ID, or the customer's prefixed). Scoped by the M..., that client would be
//     served, and every client above exposed to the double payment.
//   - The limits per wallet (a daily total, a per-transfer maximum) must count what lands on the
//     account: per M... address they could be dodged by changing the id. The history is read by
//     the same scope: the account's history holds all its muxed addresses' transfers, each
//     showing its address and id; an M... address's view and history show only its own (View,
//     History: shows), so a customer-facing caller that names the M... sees no other customer's.
//
// A G... or C... wallet is its own scope: its store key is StoreKey of the address itself, and a
// request without a memo fingerprints as its four fields alone (Memo.fingerprintPart), so items
// stored without either keep their keys and fingerprints.
//
// # Limits
//
// Per asset (Limits, limits.go; README.md, "Configuration", LIMITS): a per-transfer maximum, a
// wallet's daily total and the asset's daily total, days in UTC.
//
//   - The amount is checked first (Limits.CheckAmount): above the per-transfer maximum, or above a
//     daily cap (no day could pass it), the call is 422 AMOUNT_ABOVE_LIMIT before any write. The
//     key is read first only then: a key that already holds an item is answered from it, as a lost
//     claim would be, so a request accepted before the limit was lowered still replays.
//   - The daily totals are counters the claim charges (Record.Charges, Limits.Charges: the
//     wallet's counter keyed by WalletHash of its scope, the G... account of an M... address as
//     "Muxed wallets" requires, the asset's, each with the amount in stroops and its
//     cap), in the same atomic write as the claim (Store.Claim; internal/dynamo/doc.go, "Limits"):
//     a charge that would take its counter above its cap makes the claim write nothing and return
//     *LimitError DAILY_LIMIT_EXCEEDED (429, Retry-After the next UTC midnight), and the key stays
//     free. The claim's own condition comes first: a key held by another item is answered as a
//     lost claim (replay, conflict, wait) and charges nothing, so a replay is never charged and
//     never refused by a limit. An async transfer is charged by its queued claim (Enqueue), when it
//     is accepted; its runs, requeues and take-overs claim nothing and charge nothing again.
//   - A charge counts on the UTC day of its claim, whenever the transfer lands.
//   - A charge is given back (Counters.GiveBack, once per claim) when nothing moved and nothing can
//     move under its incarnation (GiveBackOf): the item becomes rejected (a FAILED transaction
//     moves no funds; a queued request refused) or cancelled (a queued transfer no submitter
//     took), or is deleted while unsettled (a release: never sent, refused, proven dead; an
//     operator's discard). A settled success keeps its charge, and so does an item in doubt:
//     it may still land. The give-back runs from the table's stream (internal/alert), so it lands
//     a few seconds after the change; until then the counter still holds the charge and a claim
//     that needs that room is refused: the limit errs towards refusing, never above its cap. A call
//     that proves its own envelope dead and claims again charges its new claim before the old
//     one's give-back lands, so near a cap it may be answered DAILY_LIMIT_EXCEEDED where a retry a
//     few seconds later passes.
//   - A cap lowered during a day applies to the next claims against the day's totals as counted
//     (a total above the new cap refuses every claim until midnight); a cap raised gives room at
//     once. A give-back after its day changes nothing that any claim reads.
//
// # Incarnations
//
// One key can hold a sequence of items over time: releasing a key (its envelope proven dead, or
// never sent) deletes its item, and the next claim creates a new one. Each such item is an
// incarnation of the key, named by a Record.ClaimID: 16 random bytes written by the claim and kept
// by every later write of that item (attach, take-over, settle, in_doubt, operator resolve). The
// version restarts at 1 with every claim, so a version alone cannot tell two incarnations apart.
//
// The rule: every conditional write names the item exactly as its writer read it (Expect): the
// incarnation, status, version, lease owner and the inner hash of the envelope it holds. A writer
// that read an earlier incarnation (a slow sweep, an operator, a delayed take-over, a stale inline
// reconciler) therefore fails its condition against a later one; it can never settle, take over or
// delete an item it did not read. The writes go through ReplaceItem and DeleteItem, which also
// recognise a write of their own whose answer was lost (the SDK's retry fails its condition against
// the item it wrote): a claim by its ClaimID and lease owner, a replace by the item it wrote, a
// delete by the incarnation being gone. The same holds for channel account leases, whose owner ID is
// unique per lease (internal/dynamo, ChannelLeases).
//
// A random ClaimID, not a version that keeps rising across releases, names an incarnation: such a
// version needs a tombstone per released key (an item that outlives the release) to remember the
// last version, while a random ID needs no state beyond the item itself. An item that carries no
// ClaimID (a table may hold items written without one) is matched only by a condition with an
// empty ClaimID, never by a later claim.
//
// # Batches
//
// With BATCH_SIZE above 1 (1 to 100; 1, the default, is the one-transfer path above, unchanged)
// the submitter pays several queued transfers with one transaction: one operation per key, from
// one channel, fee-bumped once. The promise does not change: at most one envelope holding a key's
// operation can ever land, and every answer names a landed transaction that holds this key's
// operation (its inner hash and the operation's index). Each key is still judged alone: a batch
// is a way to send, never a unit of outcome. The protocol below is checked by internal/chaos/model
// (the batch models: two keys in one batch, a synchronous caller on one of them, the sweep, a
// cancel, lost answers and process death between any two steps), including that each rule below
// is needed: break it and the checker finds a double payment or a false answer.
//
// The network's rules it rests on (stellar-core, src/transactions/TransactionFrame.cpp, and
// stellar-xdr, Stellar-transaction.x):
//
//   - A transaction's operations apply atomically. TransactionFrame::applyOperations applies each
//     operation in its own LedgerTxn nested in the transaction's; a failed operation's is rolled
//     back (since protocol 14) and the loop goes on, so every operation gets a result; the
//     transaction's LedgerTxn is committed only when all succeeded, else the result is txFAILED
//     and nothing of it moved (the fee is charged and the sequence number consumed, as for one
//     operation: doc.go's "Proof rules", releaseShortfall).
//   - txFAILED carries each operation's result (TransactionResult: `case txFAILED: OperationResult
//     results<>`; under a fee bump, txFEE_BUMP_INNER_FAILED with the inner result pair). Each
//     operation's result is computed after the transaction's earlier operations applied, which is
//     why a batch holds at most one operation per (destination account, asset), below.
//   - At most 100 operations (`const MAX_OPS_PER_TX = 100`, `Operation operations<MAX_OPS_PER_TX>`);
//     and a Soroban transaction holds exactly one (TransactionFrame::validateSorobanOpsConsistency:
//     txMALFORMED otherwise), so only classic payments batch: a deployment with VAULT_CONTRACTS
//     keeps BATCH_SIZE 1 (configuration refuses more). A transaction has one memo
//     (Transaction.memo), so a request with a memo runs alone; an M... wallet's id travels with its
//     operation and batches.
//   - A fee bump's minimum fee counts the inner operations plus one
//     (FeeBumpTransactionFrame::getNumOperations), so a batch of n pays n+1 base fees where n
//     transfers alone pay 2n.
//
// Forming a batch. SubmitterFunction's event carries up to the event source mapping's BatchSize
// messages (above 10 it needs a batching window: the Lambda developer guide, "Using Lambda with
// Amazon SQS"): k x BATCH_SIZE in template.yaml, k transactions' worth, k the messages an
// unbatched invocation carries at that channel count, so that an invocation, which lasts about a
// ledger whatever it carries, pays k transactions and the event source's MaxConcurrency
// invocations keep one transaction in flight per source account, as unbatched keeps one transfer.
// The handler decodes them and reads every item (consistent reads), in as few requests as the
// store can (ManyReader.GetMany: one BatchGetItem per 100 items, one round
// trip where a GetItem each took one per item; each item is read consistently but not all at one
// instant, which nothing here needs: each key's take is conditional on its own item as read), else,
// or for what a failed GetMany left unread, one Get per item; an item that is
// not queued under its message's ClaimID, or is not batchable (a memo, a Soroban asset, a stored
// request that no longer matches its fingerprint), goes the one-transfer way (RunQueued), which
// answers it stale, retry or runs it alone. The rest form batches of at most BATCH_SIZE, at most
// one operation per (destination account, asset) (FormBatches): a second payment to the same
// trustline goes to the next batch, so that a destination-side result is a fact about its own key
// and never about a neighbour that filled the line first. A batch left with one key runs alone.
// At most k transactions are paid (Settings.TransactionsPerInvocation,
// SUBMITTER_TRANSACTIONS_PER_INVOCATION), counted in the messages' order: each batch formed and
// each queued key that runs alone (a memo, a destination the check refuses, a batch left with
// one key), since each takes a source of its own. A key that would take one more
// (BATCH_OPS_PER_LEDGER made the batches smaller than BATCH_SIZE, its destination is in every
// batch already, or the event's lone keys used the k) is neither taken nor written, and its
// message is answered DeliveryRetry a ledger later (CHANNELS_BUSY): its item stays queued under
// the same claim, as before the event, so the next delivery or the sweep finds it unchanged. The
// k transactions run at once, each from its own source. Batches that BATCH_OPS_PER_LEDGER's share
// makes 1 (Settings.BatchSize 1 with BATCH_SIZE above 1) still come k x BATCH_SIZE messages an
// event, so the submitter still runs the event here (internal/wiring: BATCH_SIZE as set): every
// key alone, at most k of them, and no destination check (there is no batch to keep one out of).
//
// Taking the keys. Each key is taken as today (queued -> in_flight under the invocation's lease,
// conditional on the item exactly as read, Expect), one conditional write per key, issued
// concurrently, not one TransactWriteItems: nothing is built or sent between the take and the
// attach, so a key whose take fails (a cancel won it, a copy of the message took it) simply drops
// out of the batch (a batch left with one key runs alone). A transaction would cost twice the
// write units (transactional writes bill two per KB) and one failed condition would cancel every
// take, to be retried without it. A take whose answer was
// lost is recognised as today, by reading back its own lease (ReplaceItem).
//
// Checking the destinations. Before building, each destination is read as stellar-core will judge
// it (PathPaymentStrictReceiveOpFrame::doApply: the account exists, else op_no_destination;
// PathPaymentOpFrameBase::updateDestBalance: the trustline exists (op_no_trust), is authorized
// (op_not_authorized) and has room under its limit after its buying liabilities (op_line_full); a
// native payment: room below INT64_MAX). The event's keys are checked at most 100 at a time, the
// checks concurrent, every payment to one line in the same check (its earlier payments count
// against the line's room, and the event's batches land together); one Stellar RPC getLedgerEntries holds a check's keys (at most 200 a call): each
// destination's trustline (which implies its account: a trustline is an account's subentry) or,
// for XLM, its account, then the accounts of the trustlines missing. Horizon deployments read each destination's account, which lists its trustlines, concurrently. A
// key whose destination fails the check is not rejected on the read: it runs alone (a batch of
// one), so the network gives its verdict (a trustline added meanwhile is honoured) and its
// rejection, like every answer, names a landed transaction. The check only keeps a doomed
// operation out of everyone else's transaction.
//
// Paying what the vault holds. PrepareBatch reads the vault's trustline of each asset with the
// source's sequence number; when its available balance cannot pay the batch's sum of that asset
// it builds nothing and says what the vault can pay of each asset (BatchShortfallError), and the
// domain decides (batchshort.go, prepareBatch): the batch is built again from the keys the vault
// covers, walking the batch's order and taking each key that still fits what is left of its
// asset (coverable, which says why this rule), under a minTime of those keys' claims; only they
// are persisted and attached, so nothing is sent before every key of the envelope names it. A key
// that fits alone but not what is left is queued again as the whole batch's keys were before
// (VAULT_UNDERFUNDED with its Retry-After, one page for the batch, each key's run counted on
// transfer_orchestration_failure_total); a key the vault cannot pay even alone as one transfer's
// Prepare refusal is (its own VAULT_UNDERFUNDED, queued again; under the batch's one page). Nothing was sent for
// either, so a requeue is safe, and a later run pays each once the vault is funded. One key
// covered runs alone; a batch built again and refused again is refused whole, never split twice.
//
// Persisting the envelope. The batch's envelope is stored once, in its own item (BatchEnvelope,
// BatchStore.PutBatch), pk "batch:<inner hash>", written with PutItem `attribute_not_exists(pk)`
// before any key names it: the signed XDR, inner and outer hashes, maxTime, submitted ledger,
// channel, fee, and the operations in order (index -> store key and ClaimID). Then one
// TransactWriteItems attaches it to every key (BatchStore.ReplaceAll, through ReplaceAllItems):
// per key the item (still in_flight under the same lease) gains the envelope's hashes, maxTime,
// submitted ledger and channel, without the XDR, and its operation (Record.Batch: index and size),
// conditional on the item as taken. The envelope is sent only once that transaction applied (or,
// its answer lost, every item reads back as written). It must be one transaction: attached key by
// key, a death between two attaches leaves a key whose item names the envelope and one whose item
// does not, and a take-over of the first re-sends an envelope holding the second's operation while
// the second runs again (the model finds this double payment). If it fails for a key (that key's
// lease was taken over), nothing is sent and nothing names the envelope: every key still held is
// requeued, each alone, and the batch item is left unreferenced (inert; its TTL removes it). If its
// fate is unknown, nothing is sent either and the keys are left to their lease: applied, every key
// names the envelope and a take-over re-sends it; not applied, none does and none can.
//
// The XDR is stored once rather than on every item: a batch of 100 payments is about 10 KB of XDR
// (about 14 KB in base64), so on each item it would make the attach a 1.4 MB transaction of 100
// items of 15 KB (3,000 transactional write units) instead of one 25 KB item and 100 small ones
// (about 430); and the batch item plus 100 keys would be 101 items, past TransactWriteItems' 100
// (and its 4 MB). The batch item stays far below the 400 KB item limit.
//
// Replacing a batch by fee. A batch of n payments takes n+1 operation slots of one ledger at once,
// so at a single transfer's rate it is the transaction left out whenever others leave less room;
// while its lane is surge priced it bids the lane's highest recent rate (internal/stellar's
// fees.go, batchRate), and the awaiting judge (the submitter, or a take-over of one of its keys:
// awaitBatch) replaces it as submit replaces one envelope (replace.go: ReplaceAfterLedgers after
// its first send, only while the lane is surge priced and, as the Replacer judges it, another
// party outbid it, Replacer.Replace at stellar-core's 10x):
// the same signed inner transaction, so the same sequence number and maxTime, in a new fee bump.
// Its XDR, outer hash and every outer hash are written to the batch item by a conditional write
// on the item's version (BatchStore.ReplaceBatch, through ReplaceBatchItem) before it is sent; a
// write whose answer was lost is read back (the item holds the new outer hash at the next
// version: sent), a write of unknown fate sends nothing new, and a write that lost its condition
// (another judge replaced it first) sends the envelope the batch item names now. The keys' items
// are not written: they keep the hashes they were attached with, and every reader of a batched
// key's hashes (BatchOf: Settle, the sweep, a take-over, an inline reconciler, an operator's view
// and resolve; the in-doubt page) takes them, with the XDR, from the batch item. So every fee
// bump that may land is named by the batch item before it is sent, and at most one of them can
// land (one sequence number). A judge that may have sent before re-reads the batch item before
// each send and sends its newest fee bump, never one another judge replaced: the network refuses
// the older one as paying too little, naming ten times the replacement's fee, which is no price
// of the lane (batchstale_test.go). MAX_FEE_STROOPS caps each payment: a batch of n may bid n
// times it (bidRate). The chaos model sends no replacement; batchreplace_test.go holds these rules.
//
// How long a batch item lives. Every judge of a batched key reads the batch item (BatchOf), and
// an in_flight or in_doubt key never expires, so the batch item must outlive every key that names
// it unsettled, however long that lasts: it is written without a TTL and keeps none while any key
// names it in_flight or in_doubt. Whoever decides a key (the submitter once for all it judged, a
// take-over, Settle, an operator's resolve) then reads the batch's other items, in order,
// stopping at the first still unsettled; if none is, it sets the TTL to now + KeyTTL + BatchKeep
// (ReleaseBatch, BatchStore.ExpireBatch). Concurrent judges cannot both miss it: each reads after
// its own write, so the last to write sees every other key decided, and no key enters that state
// again (only the attach puts it there, before anyone judges). A batch whose attach failed, or
// whose keys were requeued together, gets its TTL at once by the same rule (its keys read back
// naming nothing, or written by the requeue). The alternative,
// copying what a judge needs onto each key's item, would put the XDR (a take-over re-sends it) on
// every item, which the paragraph above rules out. The cost is one UpdateItem of the batch item
// per batch (it bills its size, about 25 write units for 100 operations, a quarter of a unit per
// transfer) and, for a batch left in doubt, the reads of its keys; a batch whose attach's fate
// stayed unknown and never applied keeps no TTL (a lasting item of at most 25 KB, never a stuck
// key).
//
// Outcomes, per key. Whoever judges a batched key (the submitter, a take-over, an inline
// reconciler, the sweep, an operator) reads the batch item, looks the batch's hashes up once, and
// writes that key alone, conditional on its item as read; a key settled meanwhile by another judge
// does not hold up the others, and every judge derives the same outcome from the same ledger
// facts:
//
//   - SUCCESS: replayable, the result naming the inner hash, the ledger and the operation index.
//     One event per key.
//   - FAILED: this key's own operation result decides (JudgeOperation). A failure of its own (a
//     destination-side code: op_no_destination, op_no_trust, op_not_authorized, op_line_full; or
//     any code a single transfer's FAILED would store) is a stored rejection naming the
//     transaction and the index. A key whose operation succeeded (op_success: a neighbour failed)
//     is requeued (Requeued: the same incarnation, no envelope): nothing of the transaction moved
//     and its sequence number is consumed, so nothing can land under it again. A source-side code
//     (op_underfunded, op_src_no_trust, op_src_not_authorized; tx_insufficient_balance, which
//     carries no operation results) pages once for the batch, as SourceShortfall does for one
//     transfer, and its key is requeued too: the vault's shortfall is not the client's mistake.
//     A transaction-level code follows a single transfer's rule too: one it releases
//     (SourceShortfall: tx_insufficient_balance, tx_bad_auth and the other service-side codes,
//     all set after the sequence check) requeues every key and pages once; any other (tx_too_late,
//     tx_bad_seq, tx_no_account, tx_insufficient_fee, ...: set before the sequence check, so
//     nothing proves the envelope cannot apply later) is every key's stored rejection naming the
//     transaction, never a requeue: a new envelope for the keys could land beside this one.
//   - Proven dead (ProvenDead on the batch's envelope and hashes): every key is requeued, each
//     alone; no send can make it land any more.
//   - Refused on its first send (RefusedBeforeInclusion), or no send ever left: the proof holds
//     only for the sends of this invocation, and a take-over of any key of the batch sends the same
//     envelope again, which a key's own condition cannot see. So the keys are requeued together,
//     in one TransactWriteItems conditional on every item as attached: it applies only while no
//     key was taken over (so nobody else can have sent it), and once it applied no item names the
//     envelope, so nobody ever will. If it fails, the keys still held are parked in_doubt and
//     settled by the batch's proof. (Requeued key by key, the model finds the double payment: the
//     submitter is slow after the refusal, a synchronous caller takes the first key over and sends
//     the envelope again, and the second key, its own condition intact, is queued again while the
//     envelope holding its operation can land.)
//   - In doubt when the budget ends: every key is parked in_doubt, each naming the batch's inner
//     hash; each is in the in-doubt list and gauge, and the batch pages once (internal/alert: the
//     first key's stream record claims the batch item's page, dynamo.Store.PageBatch). The sweep, an inline reconciliation and an operator settle each key by the rules above
//     from the batch's proof; an operator's resolve with a hash is checked on chain to hold this
//     key's operation at its index.
//   - A key whose batch item does not hold its operation (ErrBatchMismatch: the item lost, or
//     naming another key at its index) is never judged nor sent: an expired claim of it is parked
//     in_doubt for an operator (Settle), and only a forced discard releases it, once no ledger
//     can include the batch (internal/reconcile).
//
// A shortfall on the paying or the service's side pages through the alarms on
// transfer_orchestration_failure_total, which read no log line: the submitter reports each key's
// run as RunQueued reports a message alone (a refusal before or on the first send included), and
// Settle counts the page of a batch it finds FAILED on that side (FailureCounter).
//
// Synchronous callers and cancels. A batched key is an async item, and a synchronous call with the
// same key and request meets it as it meets any: queued or in_flight under a live lease, it waits
// (coalesce); a lease that expired is taken over for that key alone: with no envelope yet, the key
// runs alone, as a batch of one; with the batch's envelope, the same envelope (read from the batch
// item) is re-sent and judged for this key only, never rebuilt. An in_doubt key is settled inline
// from the batch's proof; a settled one is replayed. Only a queued item can be cancelled: of a
// cancel and the batch's take of one queued state exactly one applies (both are conditional on
// it); a key cancelled before its take drops out of the batch and nothing is built for it.
//
// Where it lives: Orchestrator.RunQueuedBatch (batchrun.go) is the submitter's path, through the
// BatchLedger port (PrepareBatch, CheckDestinations; ports.go); every judge of a batched key goes
// through BatchOf and judgeBatched (batchjudge.go): Settle, a take-over (takeOverBatched) and,
// through Settle, inline reconciliation, the sweep and an operator's discard. RunQueuedBatch and a
// take-over replace an outbid batch by fee in awaitBatch (replaceBatchByFee, replace.go).
//
// What the batch changes elsewhere: each key keeps its own limits' charges (charged at Enqueue; a
// rejected key's charge is given back as today). Each key's result holds its share of the
// transaction's fee (FeeShare). The channel is leased per batch and released
// (Ledger.Done) once the batch is decided. Each key's message is answered as RunQueued would
// answer it (done when its key holds an outcome, retry when requeued). A panic in one of the
// goroutines that run a message alone or a batch (or a batch's per-key steps) is recovered there
// and fails only that goroutine's messages, DeliveryRetry with INTERNAL_ERROR (recoverRun): each
// item, as the panic left it, decides its next delivery, as after a crash of the invocation but
// without redelivering the event's other messages. A batch's minTime is
// derived from every claim in it, in order, so two batches never sign byte-identical envelopes.
package transfer
