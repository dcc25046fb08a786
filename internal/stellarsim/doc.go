// Package stellarsim is a local, single-node Stellar network for tests and
// the local stack: Stellar RPC (JSON-RPC at /rpc), a Horizon subset (at /),
// friendbot (/friendbot) and an admin API (/_sim/) over one in-memory ledger,
// with real XDR, real hashes bound to the network passphrase, real ed25519
// signatures, and faults on demand.
//
// It exists so the "at most one transaction lands" promise can be tested
// against the behaviours that matter: what is accepted, what is answered,
// what lands, when, and what a lookup can still see.
//
// Versions it follows (versions.go): ledger protocol 26 (pubnet's since
// 2026-05-06), with the ledger shapes stellar-core writes at it and the queue
// and transaction rules of current stellar-core (read up to v27.1.0; see
// "Protocols 24 to 26" below); stellar-rpc as the release profile says
// (Options.RPCVersion: "current" = v25.1.0 and later, read up to v27.1.1, the
// default; "v25.0", "v24", "v23"); Horizon as the release profile says
// (Options.HorizonVersion: "current" = stellar-horizon 28.0.0, the default;
// "v27", "v26", "v25", "v22"). Every answer that names a protocol says 26:
// getVersionInfo, getNetwork, getLatestLedger and getLedgers (protocolVersion),
// the ledger headers' ledgerVersion, Horizon's root (current_protocol_version,
// core_supported_protocol_version) and /ledgers (protocol_version).
// getVersionInfo reports the RPC profile's release and captiveCoreVersion
// "stellar-core 26.1.0 (stellarsim)"; Horizon's root the same core_version,
// the Horizon profile's horizon_version ("28.0.0-stellarsim") and
// supported_protocol_version (its release's MaxSupportedProtocolVersion).
//
// # Protocols 24 to 26
//
// Read in stellar-protocol (core/README.md's CAP table) and stellar-core
// (master after v27.1.0; protocolVersionStartsFrom / IsBefore V_24, V_25, V_26
// in src/transactions, src/herder, src/ledger). Protocol 24 is CAP-76 (the
// protocol 23 archival bug remediation), 25 is CAP-74 and CAP-75 (BN254 and
// Poseidon host functions), 26 is CAP-73 (the Stellar Asset Contract creates
// G-account trustlines and accounts), CAP-77 (frozen ledger keys), CAP-78,
// CAP-79, CAP-80 and CAP-82 (host functions). None of them changes classic
// payments, fees (inclusion fee, surge pricing, the refundable Soroban fee
// and its refund), sequence numbers, time bounds, the queue's limits, bans or
// replace-by-fee rule, getTransaction's answer or the meta's shape
// (TransactionMeta v4 and LedgerCloseMeta v2 since protocol 23; go-stellar-sdk
// v0.7.3 decodes both and the protocol 26 result codes). Followed here:
//
//   - CAP-77, frozen ledger keys (frozen.go; FreezeKeys, PUT /_sim/frozen_keys):
//     a transaction that accesses a frozen account or trustline (its source,
//     an operation's source, a payment's destination account or either
//     trustline, a CreateAccount's destination, a ChangeTrust's trustline, a
//     Soroban footprint, a fee bump's fee source) is txFROZEN_KEY_ACCESSED at
//     submission (TransactionFrame::commonValidPreSeqNum ->
//     accessesFrozenKey; FeeBumpTransactionFrame::checkValid), and dropped
//     and banned at the next close if a key it accesses is frozen while it
//     waits (TxSetUtils::trimInvalid judges it with the same checkValid).
//   - Fee-source accounting across phases (protocol 26: TxSetFrame.cpp,
//     ApplicableTxSetFrame::checkValid, useCrossPhaseFeeMap; TxSetUtils::
//     getInvalidTxListWithErrors with one accountFeeMap over the classic then
//     the Soroban phase in makeTxSetFromTransactions and HerderImpl::
//     updateTransactionQueue): a fee source's classic fees count against its
//     Soroban transactions; its classic transactions are judged on their own.
//   - A fee bump's inner result has feeCharged 0 and the outer one the whole
//     fee, refund included (protocol 25: FeeBumpTransactionFrame::
//     processFeeSeqNum sets innerFeeCharged only before V_25;
//     FeeBumpMutableTransactionResult::finalizeFeeRefund).
//   - A Soroban transaction with a memo or a muxed source is txSOROBAN_INVALID
//     wherever it is judged, at submission and at close (protocol 25:
//     TransactionFrame::commonValidPreSeqNum, validateSorobanMemo; before,
//     only the queue refused it, TransactionQueue::canAdd).
//
// Deliberately not modelled: CAP-73 (this network has no Stellar Asset
// Contract: the vault contract keeps its own book and moves no asset, see
// VaultHost), CAP-74/75/78/79/80/82 (host functions the vault does not
// call), CAP-76's one-off ledger entry repair at the protocol 24 upgrade,
// CAP-77's freeze-bypass transaction list and the claimable balance and
// liquidity pool results it adds (those operations are not modelled), the
// validator vote that changes the frozen keys (FreezeKeys acts at once),
// and protocol 25's switch of ed25519 verification to ed25519-dalek
// (LedgerManagerImpl: enableRustDalekVerify; Go's crypto/ed25519 verifies
// here, which differs only on non-canonical encodings no SDK produces).
// Protocol upgrades themselves are not modelled: the network is at 26 from
// genesis.
//
// # Modelled
//
//   - Accounts: native balance, sequence number (new accounts start at
//     ledger<<32), subentries, base reserve ((2 + subentries + sponsoring -
//     sponsored) x BaseReserve), reserve sponsorship.
//   - Signers and thresholds (signatures.go, setoptions.go): a new account has
//     its master key alone (weight 1, thresholds 0); SetOptions sets the master
//     weight, the low/medium/high thresholds and ed25519 signers (added with a
//     weight, re-weighted, removed with weight 0; each a subentry; at most 20).
//     Signatures count by weight as core counts them (TransactionFrame::
//     checkSignature, SignatureChecker::checkSignature): the transaction (and
//     a fee bump's fee source) at the low threshold, else txBAD_AUTH; each
//     operation at its level (OperationFrame::getThresholdLevel: medium;
//     ExtendFootprintTtl and RestoreFootprint low; SetOptions of the master
//     weight, a threshold or a signer high), else
//     opBAD_AUTH in txFAILED; master weight 0 disables the master key. Signers
//     are kept in key byte order (SetOptionsOpFrame::addOrChangeSigner). A
//     fee bump's extra outer signature is txBAD_AUTH_EXTRA before its inner
//     transaction is judged (FeeBumpTransactionFrame::checkValidImpl). At
//     close the signatures are judged again (TransactionFrame::commonPreApply):
//     a transaction of the set whose signer or threshold an earlier one of the
//     same ledger changed is included FAILED (txBAD_AUTH, txBAD_AUTH_EXTRA, or
//     txFAILED with opBAD_AUTH), fee charged and sequence number consumed; a
//     fee bump's own signatures are not judged again at apply
//     (FeeBumpTransactionFrame::apply). A
//     signer added inside a sponsorship sandwich (a sponsored signer) is
//     refused with opNOT_SUPPORTED.
//   - Trustlines for credit assets: balance, limit, the issuer's authorization
//     (authorized unless SetTrustlineAuth changes it: the flags, not the
//     SetTrustLineFlags or AllowTrust operations) and liabilities (zero unless
//     SetLiabilities sets them, for a trustline or an account's lumens: offers
//     are not modelled), in getLedgerEntries and Horizon's balances.
//   - Transactions of many operations (apply.go; TransactionFrame::
//     applyOperations): each operation applies in its own scope nested in the
//     transaction's, kept only if it succeeded, so a later operation is judged
//     after the earlier ones applied; every operation gets its result; one
//     failure makes the transaction txFAILED (under a fee bump
//     txFEE_BUMP_INNER_FAILED with the inner result pair) and nothing of it
//     moves. A payment is judged in core's order (operations.go: the
//     destination account, the destination's line or balance, then the
//     source's), so PAYMENT_NO_DESTINATION, NO_TRUST, NOT_AUTHORIZED,
//     LINE_FULL (limit or INT64_MAX less buying liabilities), SRC_NO_TRUST,
//     SRC_NOT_AUTHORIZED and UNDERFUNDED (less selling liabilities) come out as
//     core's. At most 100 operations: 101 do not decode (stellar-xdr's
//     MAX_OPS_PER_TX), sendTransaction answers invalid_xdr. Fees, the fee
//     bump's minimum, the classic lane's capacity and surge pricing count
//     operations, a fee bump one more than its inner transaction
//     (FeeBumpTransactionFrame::getNumOperations).
//   - Operations: CreateAccount, Payment (native and credit, issuer mints and
//     burns), ChangeTrust (create, update, remove), Begin/EndSponsoringFutureReserves
//     (sponsored accounts may start with 0 XLM; sponsored trustlines), SetOptions
//     (master weight, thresholds, ed25519 signers; see above).
//   - Muxed destinations and memos (SEP-23; operations.go, applied.go): a Payment
//     to a muxed account credits its ed25519 account, the id unread
//     (PaymentOpFrame::doApply, toAccountID of the destination); the memo of any
//     type travels untouched. The records show both as Horizon does: memo_type
//     and memo on the transaction (base64 for a hash or return), and the
//     payment's muxed address and id beside its account (GET /_sim/transactions;
//     Horizon's to_muxed, to_muxed_id).
//   - Acceptance as stellar-core does it, in core's order: txMISSING_OPERATION,
//     txTOO_EARLY / txTOO_LATE (time and ledger bounds), txINSUFFICIENT_FEE
//     (BaseFee x ops; fee bumps BaseFee x (ops+1) and a rate at least the
//     inner one), txNO_ACCOUNT, txBAD_SEQ (must be current+1), txBAD_AUTH,
//     txINSUFFICIENT_BALANCE (fee above balance minus reserve), op checks
//     (opBAD_AUTH for a missing operation-source signature, malformed
//     amounts) reported as txFAILED, txBAD_AUTH_EXTRA. Fee-bump inner
//     failures are txFEE_BUMP_INNER_FAILED with the inner result pair.
//   - The queue (queue.go; stellar-core src/herder/TransactionQueue.cpp and
//     HerderImpl.cpp): one transaction per source account, across classic
//     and Soroban (HerderImpl::recvTransaction: one of the other kind gets
//     TRY_AGAIN_LATER); against the queued one (TransactionQueue::canAdd) the
//     identical envelope, or the inner transaction of a queued fee bump sent
//     on its own (isDuplicateTx), gets DUPLICATE, a lower sequence number
//     ERROR txBAD_SEQ, any other TRY_AGAIN_LATER, except a fee bump of the
//     same sequence number at 10x the fee rate, which replaces it (below
//     that: ERROR txINSUFFICIENT_FEE with the fee it needs; canReplaceByFee,
//     FEE_MULTIPLIER, exact on inclusion fees per operation). The replaced
//     one is dropped, not banned, and the replacement keeps its age
//     (TransactionQueue::tryAdd: the age is the source account's), so it is
//     evicted at the close the replaced one would have been. A transaction
//     whose fee source (a fee bump's outer one) cannot pay its full fee on
//     top of the full fees already queued for that fee source is ERROR
//     txINSUFFICIENT_BALANCE, feeCharged 0, the code at the top level for a
//     fee bump too (TransactionQueue::canAdd, mTotalFees; txset.go). A
//     queued transaction not included within 4 ledger
//     closes (TRANSACTION_QUEUE_TIMEOUT_LEDGERS, TransactionQueue::shift) is
//     evicted and banned. Banned hashes are answered TRY_AGAIN_LATER: an
//     applied one while the last closed ledger is N..N+8
//     (TransactionQueue::removeApplied, TRANSACTION_QUEUE_BAN_LEDGERS = 10),
//     then it fails the sequence check (txBAD_SEQ); one evicted or found
//     invalid at the close of ledger L while it is L..L+9. A transaction is
//     applied at most once, ever.
//   - Time bounds at submission (TransactionQueue::canAdd ->
//     TransactionFrame::checkValidForOverlay, isTooEarly / isTooLate):
//     against the last closed ledger's close time, minTime with no offset and
//     maxTime with getUpperBoundCloseTimeOffset = 2 x the expected close
//     interval (Options.ExpectedCloseInterval, whole seconds) + the time
//     since the last close. On a 5 s network an envelope needs maxTime >= last
//     close + 10 s + drift, or it is refused txTOO_LATE. Ledger bounds are
//     judged against last closed + 1.
//   - After every close (HerderImpl::updateTransactionQueue): applied
//     transactions leave the queue, the queue ages (above), and what is left
//     is re-validated against the new last closed ledger with the same
//     upper-bound offset (TxSetUtils::getInvalidTxListWithErrors, which also
//     drops every transaction of a fee source that cannot pay all their full
//     fees, ACCOUNT_CANT_PAY_FEE); the invalid ones are dropped and banned
//     (TransactionQueue::ban).
//   - Time: ledger close time is max(Clock.Now(), previous close + 1s), in
//     whole seconds (HerderImpl::triggerNextLedger: nextCloseTime is the
//     clock's to_time_t, raised to the last close time + 1). When ledgers close
//     is the caller's (CloseLedger) or CloseInterval's; Options.LedgerClock
//     (ledgerclock.go; LEDGER_CLOCK for the local stack) varies the gaps,
//     seeded per ledger: a fixed beat, uniform within +-20% of the interval,
//     or pubnet's recorded gaps (5 to 9 s at the 5 s target, median 6 s,
//     scaled to the interval). NewLedgerSchedule gives the same schedule to a
//     caller that closes ledgers on a virtual clock. At close, the due queued transactions are trimmed as the
//     nominating node trims its candidates (HerderImpl::triggerNextLedger ->
//     TxSetUtils::trimInvalid): judged against the last closed ledger's state
//     at the closing ledger's close time and sequence, with the same fee
//     source check; one not valid then is dropped from the queue and banned,
//     never applied, no fee charged. Every transaction of the set that
//     remains is included, SUCCESS or FAILED (below).
//   - Visibility lag (history.go, readview.go): core has a ledger when it
//     closes; RPC and Horizon show it VisibilityLagMin..VisibilityLagMax
//     later (default 1-3 s, picked per ledger from VisibilitySeed, so the
//     same under a virtual clock on every run), as their ingestion does.
//     Until then getLatestLedger, getHealth, getTransaction, getLedgerEntries
//     (entries as of the shown ledger), sendTransaction's latestLedger, and
//     Horizon's root, /accounts, /transactions and /ledgers answer as of the
//     previous ledger. Submission is judged by core at once.
//   - Apply at close (txset.go, apply.go): the fees of the whole set (the
//     lane's base fee x ops, capped by the bid's inclusion fee, plus the
//     declared resource fee; see below) are charged before any transaction applies
//     (LedgerManagerImpl::processFeesSeqNums), each fee source paying
//     min(balance, fee), even below its reserve; then the set applies in
//     core's shuffled order (classic, then Soroban; each sorted by full hash
//     XOR the set's hash, ApplyTxSorter), the set's hash a stand-in seeded by
//     Options.ApplyOrderSeed, so a run is repeatable. Each transaction is
//     judged again as it applies (TransactionFrame::commonPreApply,
//     commonValid with applying=true): a source left below its reserve after
//     the fees is txINSUFFICIENT_BALANCE; a fee bump's outer transaction is
//     not judged again and its inner one runs even if its fee source was
//     charged short (FeeBumpTransactionFrame::apply). A failure there, or an
//     operation that fails (op_underfunded, op_no_trust, op_line_full,
//     op_no_destination, ...), is included FAILED with its result codes and
//     its fee charged; its sequence number is consumed unless it failed
//     before the sequence check (txTOO_LATE, txBAD_SEQ...). Operations apply
//     all-or-nothing. On one node a fee source is never charged short, since
//     the nomination's fee source check keeps the set payable; the apply
//     rule is tested on a set built by hand.
//   - Ledger capacity and surge pricing (lanes.go; src/herder/TxSetFrame.cpp,
//     SurgePricingUtils.cpp): the classic phase takes at most
//     Options.Lanes.ClassicOps operations per ledger (maxTxSetSize; a fee
//     bump counts its operations plus one, getNumOperations), the Soroban
//     phase at most SorobanTxs transactions (a fee bump counts two),
//     SorobanInstructions, SorobanWriteEntries and SorobanWriteBytes; zero
//     fields take pubnet's values (PubnetLaneLimits: 1,000; 2,000, 580M,
//     1,000, 286,720), PubnetLaneLimits.Scaled(f) shrinks them. When the
//     valid due transactions of a phase fit, all are taken; otherwise the
//     highest fee rates (inclusion fee per operation, compared exactly,
//     feeRate3WayCompare) are taken, skipping one that does not fit and
//     trying the next (getMostTopTxsWithinLimits), and the rest stay queued.
//     A phase that left a valid transaction out charges every transaction
//     it took the lowest included per-operation fee, rounded down
//     (computeLaneBaseFee, computePerOpFee); otherwise the base fee. The
//     fee charged is in the result (getTransaction, Horizon's fee_charged),
//     the ledger close meta's component baseFee, and ClearingFee.
//   - Queue limits (queuelimit.go; TxQueueLimiter::canAddTx,
//     SurgePricingPriorityQueue::canFitWithEviction): each queue (classic,
//     Soroban) holds Options.QueueMultiplier (default 2,
//     TRANSACTION_QUEUE_SIZE_MULTIPLIER) times its ledger limits. A new
//     transaction that does not fit evicts the lowest bids if it outbids
//     each of them (evicted ones are banned); otherwise it is banned and
//     answered ERROR txINSUFFICIENT_FEE with feeCharged the full fee it
//     would need (computeBetterFee: floor(bid x ops / its ops) + 1, plus the
//     resource fee), or TRY_AGAIN_LATER when it is larger than the queue or
//     only its own source's transaction is cheaper. Until the next close a
//     new transaction must also beat the best bid evicted from its lane,
//     even when it would fit. The check runs before validity, as in
//     TransactionQueue::canAdd.
//   - Fee statistics from what ledgers charged (feestats.go): getFeeStats as
//     stellar-rpc's fee windows (feewindow.go, IngestFees): inclusionFee is
//     feeCharged / inner operations over 10 ledgers (a fee bump's fee is
//     divided by its inner operations alone), sorobanInclusionFee the
//     inclusion part of a Soroban transaction's fee over 50 ledgers, all
//     zeros for a window without transactions; Horizon's /fee_stats as
//     history.Q.FeeStats over the last 5 ledgers: fee_charged and max_fee
//     over operations plus one for a fee bump, Soroban included, the base
//     fee everywhere when no transaction, and ledger_capacity_usage.
//   - Background congestion (congestion.go, POST /_sim/congestion,
//     Options.Congestion, SetCongestion): after every close, PerLedger
//     one-payment transactions from accounts the network creates for itself
//     enter the queue like any other, bidding a seeded log-uniform fee per
//     operation in FeeMin..FeeMax; a spike bids at least Multiplier x the
//     clearing fee of the ledger before it, for a duration counted on the
//     network's clock. With SorobanPerLedger (congestion_soroban.go; it needs
//     a VaultHost) contract calls fill the Soroban lane too: each is a vault
//     deposit by a background account into its own balance in a vault it
//     operates (deployed on first use with a salt derived from the account),
//     built from simulateTransaction's transaction data and auth as a client
//     builds one (SorobanInstructions may declare more instructions), bidding
//     a seeded log-uniform inclusion fee in SorobanFeeMin..SorobanFeeMax on
//     top of its resource fee, from draws and an account pool of its own (so
//     the classic traffic is the same with or without it); a spike raises it
//     to Multiplier x the Soroban clearing fee. From submission on it is any
//     transaction: the Soroban queue's limits and evictions, the Soroban
//     phase's limits (TransactionFrame::getResources: one transaction, its
//     declared instructions, read-write entries and write bytes), the
//     phase's base fee, the refund, and getFeeStats's sorobanInclusionFee.
//     Same profile, seed, clock and submissions: same ledgers. Fee-rate ties
//     break by hash and Options.SurgeSeed (core: at random).
//   - Horizon's synchronous POST /transactions (horizon_submit.go;
//     stellar-horizon internal/txsub/system.go) answers from its own
//     history: core's PENDING, DUPLICATE and TRY_AGAIN_LATER leave it open
//     until the instance that took it shows the transaction (then 200, or 400
//     for a FAILED one), or 504 after HorizonSubmitTimeout; txBAD_SEQ first
//     waits until that history shows the account at the envelope's sequence
//     number (or has caught up with core) and is then answered from history
//     when the transaction is there. So a GET /transactions/{hash} or
//     /accounts/{id} right after a 200 shows it. The wait follows the
//     network's visibility of each ledger (horizon_wait.go): it wakes at each
//     ledger close, at each move of a clock that reports its moves (Advancer,
//     internal/vclock), at the next visibility time on the real clock and
//     every 10 ms on any other clock, and never moves the clock itself.
//   - stellar-rpc release profiles (versions.go; Options.RPCVersion, PUT
//     /_sim/rpc_version): getLatestLedger has closeTime, headerXdr and
//     metadataXdr from v25.0 only (get_latest_ledger.go); getTransaction reads
//     the transaction before the ledger range from v25.1 (get_transaction.go),
//     the range first before, which is how the read_order fault shows its
//     race (NOT_FOUND with a latestLedger holding the transaction, or, before
//     v25.1, the transaction found above the answer's latestLedger).
//   - History: getTransaction and GET /transactions/{hash} find a
//     transaction by inner or outer hash within the retention window
//     (oldestLedger = max(1, latest - retention + 1)).
//
// # Not modelled
//
// Consensus (a ledger's close time is the clock at CloseLedger, not the
// proposer's clock at nomination); among the lane limits, transaction bytes
// (the classic and Soroban byte allowances, ledgerMaxTransactionsSizeBytes)
// and Soroban disk reads (bytes and entries), the DEX lane
// (MAX_DEX_TX_OPERATIONS_IN_TX_SET, unset on pubnet) and the packing of
// Soroban instructions into stages and clusters since protocol 23
// (ParallelTxSetBuilder: here instructions are one per-ledger sum);
// flooding (the queue's broadcast order); background traffic other than
// classic payments and vault deposits (no other contracts, no restores, no
// fee bumps among it); offers and
// the DEX, path payments, liquidity pools, claimable balances, account merge,
// manage data, SetOptions' other fields (inflation destination, flags, home
// domain: refused with opNOT_SUPPORTED) and signer types other than ed25519
// (pre-authorized transaction, hash(x), signed payload), sponsored signers
// (refused, see above),
// the operations that set authorization flags or create liabilities
// (SetTrustLineFlags, AllowTrust, offers; the helpers set both directly), clawback,
// muxed-account semantics beyond resolving to the account,
// preconditions other than time and ledger bounds (minSeqNum, minSeqAge,
// minSeqLedgerGap, extraSigners are refused with txMALFORMED), more than one
// transaction per source account in the queue, stellar-rpc releases before
// v23 (no profile) and the other differences between stellar-rpc releases
// (method shapes are the current ones except getLatestLedger's). Unsupported classic
// operations are refused at submission as txFAILED with opNOT_SUPPORTED.
// Ledger headers and meta have stellar-core 23's shapes (LedgerCloseMeta v2,
// TransactionMeta v4 with a Soroban invocation's return value, see
// ledger_meta.go). The meta's transaction set holds every included envelope as
// submitted (a fee bump with its fee source and fee, so each bid can be read):
// the classic phase as core writes it (one component carrying the lane's base
// fee, envelopes in full-hash order; no DEX lane, so never a second
// component), the Soroban phase as one stage with a cluster per transaction
// (core's ParallelTxSetBuilder groups conflicting ones). Its other contents are
// stand-ins: ledger hashes are not hashes of the
// headers, and the meta lists the events of "Events" below and no ledger-entry
// changes but a successful credit payment's trustlines (each operation's STATE then UPDATED
// of the source's and destination's trustline, as LedgerTxn::getChanges
// lists them; no account entry, no fee changes) (friendbot's answer lists the
// account it created, which the JS SDK's requestAirdrop reads).
//
// # Events
//
// Transactions emit the CAP-67 unified events stellar-core emits from
// protocol 23 with EMIT_CLASSIC_EVENTS, which stellar-rpc's captive core
// always sets (events.go cites both): in the meta (TransactionMetaV4.events,
// operations[i].events) and through getEvents (rpc_events.go). Emitted: a
// fee event ["fee", feeSource] of the lumen's contract for every included
// transaction, failed ones too (the fee charged, before all transactions;
// a Soroban refund as a negative fee after them); for a successful
// CreateAccount a lumen transfer; for a successful payment of any asset, to
// itself too, the asset contract's ["transfer", from, to, "CODE:ISSUER" or
// "native"] (a mint ["mint", to, asset] from the issuer, a burn
// ["burn", from, asset] to it), the destination's G... account in the
// topics and, when the destination is muxed or the transaction has a memo,
// the data {amount, to_muxed_id: the muxed id (u64) or the memo (text as a
// String, an id as a u64, a hash as Bytes)}, else the bare i128 amount; for
// a vault contract's deposit or withdraw the vault's own event
// [function, wallet] with the amount (the contract is this network's, so
// are its events: no token moves). A failed transaction's operations emit
// nothing. getEvents follows stellar-rpc's get_events.go: startLedger (and
// endLedger, exclusive) or a cursor, at most 5 filters of 5 contract ids and
// 5 topic filters ("*", a trailing "**"), 100 events a page by default and
// 10,000 at most, at most 10,000 ledgers scanned a request (the cursor of a
// short page is the end of that window), ids as stellar-rpc's db/event.go
// makes them (fee events at transaction index 0, refunds at the largest),
// txHash the outer hash of a fee bump. Not emitted: diagnostic events,
// set_authorized (no authorization flags here), the events of operations
// this network refuses (path payments, offers, claimable balances, pools,
// merges, clawbacks), friendbot's and the admin API's funding (no
// transaction), events before protocol 23 (BACKFILL_STELLAR_ASSET_EVENTS);
// xdrFormat json is refused, and getTransaction's events field is left
// empty (the meta carries them).
//
// # Where it deliberately differs
//
//   - The synchronous POST /transactions hands every envelope to core, also
//     one already in its history, which Horizon answers from its database
//     without submitting (System.Submit); the answer is the same (from
//     history), only the envelope record shows core's TRY_AGAIN_LATER or
//     txBAD_SEQ. Its timeout (HorizonSubmitTimeout) is real time, also under
//     a virtual clock. A client on internal/vclock that counts as running
//     while it waits on it holds the clock still, so the transaction never
//     lands: drive the clock from elsewhere. The service uses
//     /transactions_async.
//   - getLedgerEntries serves an archived contract entry with its past
//     liveUntilLedgerSeq; stellar-rpc (ledgerentries/main.go) reports 0 for
//     an entry core already moved to the hot archive.
//   - simulateTransaction evaluates against the current entries; only its
//     latestLedger is core's.
//   - The test helpers (CreateAccount, Mint, friendbot, ...) change the
//     ledger outside any ledger close, so RPC and Horizon show them at once.
//   - Reads further back than 4,096 ledgers see the current entries.
//
// Three options make the network simpler than the real one, each off by
// default and each for tests that hold one behaviour still to test another
// deterministically:
//
//   - Options.NoVisibilityLag shows a ledger through RPC and Horizon the
//     instant it closes; stellar-rpc and Horizon show it once their ingestion
//     has read it (see "Visibility lag" above). Most of this package's own
//     tests close ledgers on a clock they do not move and read at once.
//   - Options.ApplyInSubmissionOrder applies a ledger's transactions in the
//     order they were submitted; stellar-core shuffles them by hash
//     (ApplyTxSorter), so no submitter chooses the order. Tests of a signer
//     removed ahead of a payment that still carries its signature, in the
//     same ledger, need that order every run.
//   - Options.Protocol22Restore runs the Soroban restore flow of a network
//     before protocol 23 (simulation answers a restorePreamble, an
//     invocation touching an archived entry fails with ENTRY_ARCHIVED, with
//     simpler fees: the declared resource fee judged at apply only, no
//     refund), for a client's code path that meets such a node; pubnet
//     restores in the invocation since protocol 23 (see "Soroban").
//
// # Soroban
//
// InvokeHostFunction, ExtendFootprintTtl and RestoreFootprint are refused
// with txMALFORMED unless Options.Contracts provides a ContractHost;
// VaultHost is the one this package has (vault contracts, simulateTransaction,
// contract data and TTL entries in getLedgerEntries, TTLs and archival; see
// its doc). With a host, acceptance adds core's Soroban rules: the one
// Soroban operation needs the transaction's SorobanTransactionData (else
// txMALFORMED), the fee must cover the declared resource fee plus the
// inclusion fee (txINSUFFICIENT_FEE), the declared resource fee must cover
// the non-refundable fee of the declared resources and archivedSorobanEntries
// must be ascending indices of persistent read-write entries (else
// txSOROBAN_INVALID; TransactionFrame::commonValidPreSeqNum,
// checkSorobanResources). Protocol 23 (fees.go, vault_exec.go): an
// invocation restores the archived entries its transaction data marks
// (InvokeHostFunctionParallelApplyHelper::handleArchivedEntry) and
// simulateTransaction never answers a restorePreamble for it (stellar-rpc
// lib/preflight/src/shared.rs); the fee charged is the inclusion fee plus the
// declared resource fee minus the refund of the unused refundable part
// (TransactionFrame::refundSorobanFee). An explicit RestoreFootprint restores
// too.
//
// # Endpoints
//
//	/rpc                        JSON-RPC 2.0: getHealth, getNetwork, getVersionInfo,
//	                            getLatestLedger, getLedgers, getLedgerEntries (account,
//	                            trustline; contract data, code and TTL with a VaultHost),
//	                            getFeeStats, sendTransaction, getTransaction,
//	                            getTransactions, getEvents (see "Events"), simulateTransaction
//	                            (with a VaultHost);
//	                            HandleRPC adds more. xdrFormat json is refused.
//	GET  /                      Horizon root
//	GET  /accounts/{id}         account with balances (credit first, native last)
//	POST /transactions          synchronous submit: answered from Horizon's history once
//	                            it shows the transaction, up to HorizonSubmitTimeout,
//	                            then 504; an envelope already in history is answered
//	                            with its stored result
//	POST /transactions_async    201 PENDING, 409 DUPLICATE, 503 TRY_AGAIN_LATER, 400 ERROR
//	GET  /transactions/{hash}   inner or outer hash; 404 outside the history window
//	GET  /ledgers, /ledgers/{n} order, limit, cursor
//	GET  /ledgers/{n}/transactions  in application order (classic phase first); order,
//	                            limit, cursor, include_failed
//	GET  /fee_stats
//	GET  /friendbot?addr=G...   funds FriendbotAmount directly (no transaction); also
//	                            POST, and /friendbot/ (getNetwork's friendbotUrl)
//	/_sim/...                   admin API (GET /_sim/ lists its routes and the fault kinds), see Network.Handler and admin.go
//
// Unknown Horizon resources get a 404 not_found problem (this is also the
// answer to SEP-29's memo_required data lookup). Horizon's links and
// getNetwork's friendbotUrl name the scheme and Host the client used, as
// Horizon derives them, so they hold behind another listener (the devstack).
// getTransactions differs from stellar-rpc in one cursor: a page that starts
// past the latest ledger's last transaction keeps the request's cursor where
// stellar-rpc answers (latest, 0), which repeats that ledger on the next page.
//
// # Faults
//
// See Fault. Submission faults (refuse, drop_response, delay, answer,
// drop_envelope, delay_inclusion) act on the next Count submissions through
// sendTransaction, POST /transactions or POST /transactions_async; stall
// and retention act on the ledger. Read faults act on what RPC and Horizon
// show: read_order (stellar-rpc get_transaction.go reads the transaction
// before the ledger range, so during ingestion it answers NOT_FOUND with a
// latestLedger that holds the transaction), db_lag (RPC's database trails
// its core: getLedgerEntries ahead of getTransaction), and instances (several
// RPC or Horizon instances with different lags behind one URL, answering in
// turn). Every envelope received and every
// transaction applied is recorded (Envelopes, Applied; GET /_sim/envelopes,
// GET /_sim/transactions).
//
// Over HTTP (the local stack's `$SIM`), POST /_sim/faults arms one fault or an
// array of them, GET lists those armed (count -1: until healed), DELETE heals
// all; GET /_sim/ lists the admin routes. The body's "count" counts what the
// last column says; "api" ("rpc" or "horizon") restricts a fault to one API:
//
//	kind             what it does; parameters; without count
//	refuse           closes the connection without an answer, nothing is
//	                 accepted; api; the next submission
//	drop_response    accepts the envelope (it lands), then closes the
//	                 connection without an answer; api; the next submission
//	delay            accepts as usual, answers after the delay; "delay"
//	                 (required): "2s" or milliseconds, api; the next submission
//	answer           answers without accepting; one of "status"
//	                 (TRY_AGAIN_LATER, ERROR, PENDING, DUPLICATE), "code"
//	                 ("txBAD_SEQ"; alone or with "status":"ERROR"),
//	                 "http_status" (504: an HTTP error without a body, from RPC
//	                 and Horizon), two of them refused (400), api; the next
//	                 submission
//	drop_envelope    answers PENDING, then evicts the envelope from the queue:
//	                 it never lands; api; the next submission
//	delay_inclusion  includes an accepted envelope that many ledgers later;
//	                 "ledgers" (required, > 0), api; the next submission
//	stall            ledger closes close nothing; none; until healed (count:
//	                 that many close attempts)
//	retention        shrinks getTransaction's history to that many ledgers;
//	                 "ledgers" (required, > 0); until healed (a count is
//	                 refused)
//	read_order       getTransaction answers NOT_FOUND for a transaction in the
//	                 latest ledger, as stellar-rpc does while it ingests;
//	                 "ledgers": n, any of the latest n+1 ledgers; the next lookup
//	db_lag           RPC's database trails its core by that many ledgers;
//	                 "ledgers" (required, > 0); until healed
//	instances        several RPC or Horizon instances behind one URL, answering
//	                 in turn, the slowest that far behind; "delay" (required),
//	                 "instances" (2 or more, default 3), api; until healed
//
// Client note: rpcclient's context deadline does not abort the HTTP exchange
// (the call returns only when the answer arrives, then reports the deadline);
// give rpcclient an http.Client with a Timeout to bound a delayed answer.
//
// The test helpers (CreateAccount, IssueAsset, AddTrustline, Mint, Burn,
// RemoveTrustline) change the ledger directly, like genesis, without a
// transaction.
package stellarsim
