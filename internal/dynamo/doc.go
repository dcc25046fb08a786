// Package dynamo implements transfer.Store on Amazon DynamoDB with aws-sdk-go-v2: one table,
// partition key "pk" (S), every transition a conditional write (the item's states and writes are
// internal/transfer/doc.go, "The item"), a sparse global secondary index "gsi1" that holds
// the in_doubt items and the in_flight claims, a sparse index "gsi2" of each wallet's items
// (a wallet's history), and a sparse index "gsi3" of the lasting records by store key.
//
// The table's definition lives in TableDefinition; EnsureTable creates it when missing. The item
// layout (attribute names, types and units) is documented on the item type in item.go.
//
// # Table layout
//
// One table, on-demand, with a stream of NEW_AND_OLD_IMAGES (the alert function's input) and TTL
// on "expiresAt". These kinds of item share it:
//
//   - A transfer, pk "transfer:<16 hex>:<clientKey>" (transfer.StoreKey): claimId (the
//     incarnation), status, version, fingerprint, request (a map: operationType, walletAddress,
//     amount, asset, stroops), clientKey, traceId; leaseOwner and leaseExpiresAt (epoch ms) while
//     in_flight; envelopeXdr, innerHash, outerHash, maxTime (epoch s), submittedLedger, channel
//     and feeStroops once an envelope is attached, outerHashes (L of S, every fee bump sent, oldest
//     first) once it was replaced by fee (a settled item keeps the hashes and drops
//     envelopeXdr); result (a map); audit (an operator's resolution, or a cancel: who and when);
//     createdAt and updatedAt (epoch ms); expiresAt (epoch s) on replayable, rejected and
//     cancelled items only; async (BOOL) on the items of an asynchronous transfer (a queued item
//     holds no lease, envelope or expiresAt; a cancelled one no lease or envelope, and is written
//     only in place of a queued one: Store.Replace); notBefore (epoch s) on a queued item held
//     back after a failure on the service's side, with that failure as its result (code and
//     detail), and on no other (transfer.RequeuedAfter; an item without it runs at once, and a
//     queued one without it reads without a result: a build older than notBefore wrote it back);
//     gsi1pk and gsi1sk; gsi2pk and gsi2sk.
//   - A channel lease, pk "channel:<G...>" (ChannelLeases): leaseOwner, leaseExpiresAt and
//     leasedAt (epoch ms), quarantinedUntil (epoch s: the maxTime of the envelope built on the
//     lease). A free channel has no item.
//   - A lasting record (transfer.Archive; archive.go), pk "record:<16 hex>:<clientKey>#<claimId>"
//     (ArchiveKey): one per settled incarnation of a transfer, written by the alert function from
//     the stream with PutItem `attribute_not_exists(pk) OR version < :v`. The transfer item's
//     attributes as of its settled state, except claimId (in the pk), envelopeXdr, channel,
//     submittedLedger, feeStroops, fingerprint, the lease and the limits' charges; status may also be "released"; replayUntil (epoch s) is
//     the item's expiresAt, and expiresAt is the record's own TTL (RECORD_RETENTION_DAYS; absent:
//     for ever); gsi2pk/gsi2sk ("<createdAt>#<store key>#", right before its live item in
//     descending order), gsi1pk/gsi1sk (the day's records) and gsi3pk/gsi3sk. No claim, Get or
//     conditional write names a record's pk, so a record can never hold a key, extend its replay
//     window or match a condition.
//   - A daily reconciliation's report (daily.go), pk "daily:YYYY-MM-DD" (DailyKey): report (the
//     report's JSON), generatedAt and discrepancies; no status, index key or TTL (kept for ever,
//     replaced by a later run of the day).
//   - The channel calendar, pk "channels:tickets" (ChannelLeases.TakeTicket; channeltickets.go):
//     next (N, the next ticket number) and nextAt (N, epoch ms with up to six decimals, the time
//     booked for it; items written in whole ms read the same). One item
//     per table, about 60 bytes; every process of the deployment books its channel leases on it.
//   - A daily counter of the limits, pk "limit:wallet:<WalletHash>:<asset>:<day>" or
//     "limit:asset:<asset>:<day>" (transfer.Charge.Counter; limits.go): total (N, stroops) and
//     expiresAt (epoch s, transfer.CounterKeep after its UTC day). About 100 bytes.
//   - A give-back's marker, pk "limit:givenback:<claimId>" (GiveBack): expiresAt only.
//   - A batch's envelope, pk "batch:<inner hash>" (transfer.BatchKey; batch.go), written once
//     before any key names it: the envelope's attributes as on a transfer item, ops (L of M:
//     storeKey, claimId, in the transaction's order), version, createdAt and expiresAt; no status
//     and no index attributes. The items of its keys hold batch (M: index, size) and the
//     envelope's hashes without envelopeXdr, and are written together by one TransactWriteItems
//     (ReplaceAll). Unused while BATCH_SIZE is 1.
//
// A transfer item whose claim charged the limits also holds charges (L of M: counter, scope,
// asset, day, stroops, cap) and charged (BOOL true, for the stream's filter).
//
// gsi1 (gsi1pk S hash, gsi1sk S range, projection ALL) is sparse: gsi1pk is "in_doubt" on
// in_doubt items (the durable in-doubt queue, ListInDoubt), "in_flight" on in_flight items (the
// sweep finds expired claims with one Query) and "queued" on queued items (the sweep finds those
// whose message is overdue, ListQueued), absent otherwise; gsi1sk is
// "<RFC 3339 UTC with ms>#<pk>", the time the item became in_doubt, the claim's lease expiry or
// the time the item was queued (its updatedAt), so the oldest comes first.
//
// gsi2 (gsi2pk S hash, gsi2sk S range, projection INCLUDE of WalletIndexAttributes: status,
// clientKey, request, result, createdAt, updatedAt, expiresAt; never the envelope) is a wallet's
// history (ListByWallet): gsi2pk is transfer.WalletHash of the request's wallet, the hex sha256 of
// "wallet:" + the address, so the address is never a key; gsi2sk is "<createdAt, RFC 3339 UTC with
// ms>#<pk>", queried in descending order, newest claim first. Both are derived from the request and
// createdAt on every write of the item (the claim and every Replace put the whole item), so they
// never change within an incarnation. Channel leases carry neither and are not in the index; nor
// is a transfer item a table holds without them, until its next write adds them.
//
// The writes: Claim is PutItem with `attribute_not_exists(pk) OR expiresAt < :now` and
// ReturnValuesOnConditionCheckFailure ALL_OLD, reading the holder back with a consistent GetItem
// when the answer lacks it; Replace (PutItem) and Delete (DeleteItem) are conditional on
// claimId, status, version, leaseOwner and innerHash exactly as read (transfer.Condition; an
// empty value is attribute_not_exists). A lease is PutItem with `attribute_not_exists(pk) OR
// (leaseExpiresAt < :now AND quarantinedUntil < :ledgerClose)`, its release DeleteItem with
// `leaseOwner = :owner`. A calendar booking is UpdateItem `ADD next :1 SET nextAt = nextAt +
// :spacing` if `nextAt >= :now AND nextAt <= :now + :horizon` (ReturnValues UPDATED_OLD), or,
// when that condition fails, `ADD next :1 SET nextAt = :now + :spacing` if
// `attribute_not_exists(nextAt) OR nextAt < :now OR nextAt > :now + :horizon` (UPDATED_OLD too:
// the calendar's time before the restart; a calendar that far ahead is stale); neither is idempotent, and a booking repeated after a lost answer only skips a
// ticket (TakeTicket). Every read that decides a write is a consistent GetItem, or a consistent
// BatchGetItem of up to 100 transfer items (GetMany: a submitter's event; each item read
// consistently, not all at one instant; keys left unprocessed read again after 25, 50, 100 and
// 200 ms on the Store's clock, then an error, and the caller reads those with GetItem); the index
// is eventually consistent, so what it lists is read again before it is acted on.
//
// gsi3 (gsi3pk S hash, gsi3sk S range, projection ALL) holds the lasting records only: gsi3pk is
// the transfer's store key, gsi3sk the incarnation's createdAt, so a Query in descending order with
// Limit 1 reads the newest record of a key (LatestArchive), which GET answers once the transfer
// item is gone. Why an index rather than a record pk GET could compute: the pk must name the
// incarnation (a key reused after its window keeps both transfers' records), and GET knows only the
// key. The records also sit in gsi2, so a wallet's history includes them; ListByWallet lists a
// record and its live item (adjacent, same store key and createdAt) once, as the live item, reads
// one item more than the page to see a record's twin, and accepts a record's position as a cursor
// only as strictly as a live item's (historyStart). Cost: one PutItem per settlement, a typical
// record (about 950 bytes, 1,000 with the longest text memo) one write unit in the table, gsi1,
// gsi2 and gsi3 each (archive_cost_test.go).
//
// Measured (go test -run TestARecordCostsOneWritePerSettlement -v ./internal/dynamo/, a
// 20-character key, a fee-bumped transfer): the transfer item takes 3 writes and 12 write units
// (claim, attach, settle, with their index writes); its record adds 1 write and 4 write units (a
// 947-byte item: one unit in the table, gsi1, gsi2 and gsi3), and no read; 998 bytes, the same
// units, with the longest text memo. A redelivered stream record costs one refused conditional
// write. Each character of a key adds 4 bytes, so keys longer than about 40 characters (about 28
// with a long memo) make the record 2 units in the table, gsi1 and gsi3. Storage: about 1 KB per
// transfer in the table and 2.5 KB with its indexes, kept for RECORD_RETENTION_DAYS (README.md,
// "A transfer's lasting record").
//
// gsi1 also holds the records, each under the partition of its settlement's UTC day
// ("records:YYYY-MM-DD", ArchiveDayPartition; gsi1sk its settlement time): the day's records,
// oldest first, for a daily reconciliation (ListArchivedDay). They share gsi1 rather than get a
// fourth index because CloudFormation adds one global secondary index per stack update, and gsi3
// is this update's; no live item's partition starts with "records:".
//
// # Limits
//
// The limits (internal/transfer/limits.go; README.md, "Configuration", LIMITS) must hold under
// concurrent claims from any number of processes that share only this table, so a daily total is
// an item the claim updates in the same atomic write as it claims: a claim with charges is one
// TransactWriteItems of the claim's Put (its usual condition, ReturnValuesOnConditionCheckFailure
// ALL_OLD) and, per charge, `ADD total :amount` if `attribute_not_exists(total) OR total <=
// :cap - :amount` (claimCharged). All or nothing: a refused charge writes no claim, a lost claim
// charges nothing. A read of the counter before the claim, or a counter updated after it, would
// let two claims each see room for one; a conditional counter update alone, without the claim in
// the same transaction, would charge a replay or leave a charge behind a claim that then lost.
//
// The cancellation reasons say which condition failed, one reason per item in order. The claim's
// comes first and wins: a claim that lost its key is answered as any lost claim (a replay, a
// conflict, a wait), whatever the counters say, so a limit never hides a replay and a replay is
// never charged. Otherwise the first counter that failed is transfer.DailyLimitError for its
// charge (429 DAILY_LIMIT_EXCEEDED naming it). A TransactionConflict (another transaction on the
// same counter at the same instant) wrote nothing and is written again after 1, 2, 4 ... ms, at
// most chargeAttempts times. Each write carries a ClientRequestToken derived from the claim ID
// and the attempt, so the SDK's own retry of a request whose answer was lost is applied once;
// past the token's ten minutes, a write sent again fails the claim's condition against its own
// item, which the orchestrator recognises by its claim ID (transfer/doc.go, "Incarnations").
//
// A give-back (GiveBack, called from the table's stream by internal/alert when nothing moved
// under a claim: transfer.GiveBackOf) is one TransactWriteItems of a marker Put
// "limit:givenback:<claimId>" if `attribute_not_exists(pk)` and, per charge, `ADD total :minus`.
// The marker makes it happen once per claim however often the stream delivers its record. It is
// a marker rather than a set of given-back claim IDs on the counter (`ADD refunded :id` if `NOT
// contains(refunded, :id)`): that set would grow with each give-back of the day, and every write
// to the counter, each claim's included, is billed by the item's size (a write unit per KB) up to
// the 400 KB item limit, at about 12,000 give-backs of one asset in a day.
//
// What it costs: a claim without charges is the one PutItem it always was (no limit configured for
// the asset: same requests, same units). A charged claim is one TransactWriteItems of three items
// (two with one daily limit), billed as transactional writes: two units per item of up to 1 KB,
// 6 write units where the PutItem cost 1; a replay or a conflict of a charged request costs the
// same cancelled transaction. The charges ride on every later write of the item: about 280 bytes
// for two (measured on the local stack with 8 channels: a claim 649 -> 929 bytes, the item with its
// fee-bumped envelope 1,566 -> 1,846), within the same KB for keys of ordinary length, so the
// attach and the settlement cost what they did. A give-back costs one transaction of two or three
// small items. The asset's counter is one item every claim of the asset updates: DynamoDB serves
// about 1,000 writes a second on one item, and transactions on it conflict under contention
// (retried above), so a deployment moving more than a few hundred transfers a second of one asset
// would split it.
//
// Emulators: minidyn runs TransactWriteItems all or nothing and reports the failing item's
// reason (it leaves the other items' reasons None and, for a Put, the holder out, so the claim is
// read back as after PutItem); it ignores ClientRequestToken. dynalite (4.0.0, make test-dynalite)
// has no TransactWriteItems: the limit contract (transfertest.LimitContract) runs on minidyn and
// the in-memory store only. Both have BatchGetItem (transfertest.ManyContract runs on each);
// minidyn leaves chosen keys unprocessed on request (EmulateUnprocessedItems, getmany_test.go).
//
// Counting requests: the package keeps no global state. Wrap the client handed to New (and to
// EnsureTable) with a decorator; dynamotest.CountingClient does that and is what the tests and
// benchmarks use.
package dynamo
