// Package stellar implements transfer.Ledger on a Stellar network, through Stellar RPC
// (https://developers.stellar.org/docs/data/apis/rpc: RPCLedger, and ContractLedger for the
// Soroban vault contract) or Horizon (HorizonLedger), with go-stellar-sdk for everything Stellar:
// strkey addresses, keypairs, txnbuild envelopes, xdr results and the rpcclient.
//
// It reports facts (what the network answered, what the ledger holds); the transfer package
// decides what they mean for a transfer (internal/transfer/doc.go, "Proof rules" and
// "Classification"). Amounts and fees are in
// stroops (10^-7 of a unit), times are epoch seconds or time.Time in UTC.
//
// This package is the ledger: reading the network, building, signing and submitting envelopes,
// their fees, surge pricing and replacement by fee, and the Soroban vault contract. Two ideas it
// uses are packages of their own, which import nothing of it (internal/repotest holds the rule:
// the imports point ledger -> sources -> signing):
//
//   - internal/stellar/sources chooses each envelope's transaction source: the vault itself, one
//     transfer at a time per process, or a channel account leased from the pool, whose
//     transaction a fee account wraps in a fee bump (Envelope.OuterHash). Prepare acquires the
//     source and Done releases it, through sources.Source.
//   - internal/stellar/signing holds the signing keys: the secret document, or, with SIGNER=kms,
//     AWS KMS keys for the vault and the fee account; the Signer every key signs through; and the
//     weight rules CheckSigners (signercheck.go) holds the keys to, once it has read the accounts
//     they sign for: a key whose weight there is below a threshold stellar-core will check its
//     signatures against is refused with a *signing.SignerError naming the account, the key and
//     the weights.
//
// Supported backends (versions.go; README.md, "Supported Stellar RPC and Horizon versions"):
// stellar-rpc 23.0.0 and later, Horizon 22.0.0 and later that ingests the network's protocol
// (its root's supported_protocol_version at least current_protocol_version: Horizon 26.0.0 and
// later on pubnet's protocol 26), checked by CheckNetwork at start (an *UnsupportedVersionError
// otherwise). Before stellar-rpc 25.0.0 getLatestLedger has no closeTime:
// RPCLedger reads that ledger's close time with getLedgers (rpcLatest), which keeps the proof of
// death sound whichever order getTransaction reads in. Horizon's major release is the highest
// ledger protocol it ingests (supported_protocol_version); one below the network's
// (current_protocol_version) stops ingesting at the upgrade, so nothing could be proven on it:
// refused. Tested on the local network's profiles: stellar-rpc v23, v24, v25.0 and current
// (25.1 and later); Horizon current (28.0.0), v27 and v26 accepted, v25 and v22 refused.
//
// Read order: stellar-rpc's getTransaction reads the transaction before its ledger range, so the
// range it reports may hold ledgers ingested after the search, for which its NOT_FOUND does not
// vouch. A lookup therefore reads the latest ledger first (getLatestLedger, or Horizon's root) and
// proves death either by the source account's sequence number (getLedgerEntries, below the
// envelope's: sound behind any load balancer) or by history coverage from one instance
// (transfer.ProvenDead; README.md, "Which RPC and Horizon deployments the proof supports").
// Behind a load balancer (STELLAR_RPC_LOAD_BALANCED=true) only the sequence number proves: an
// envelope is provably dead only while no later transaction has used its source's sequence
// number, which within the call is nearly always so, but for an item already in doubt rarely with
// the vault as the only source (every later transfer uses that sequence number), and only until
// its channel is reused with channel accounts; such items stay in doubt until an operator settles
// them from full history (resolve with the hash, or a forced discard). With several instances and
// the flag left false, an answer whose range ends before the ledger read first is ignored, but an
// instance that caught up between the two reads is not detected.
//
// Fees (fees.go): each envelope bids, per operation slot, the highest of the base fee, its
// surge-pricing lane's recent fees at FEE_PERCENTILE (RPC getFeeStats inclusionFee for payments,
// sorobanInclusionFee for contract calls; over Horizon, the classic clearing rates of its last 5
// ledgers, read from each ledger's first transactions, horizon_fees.go: Horizon's /fee_stats
// mixes Soroban transactions in at their whole fee, resource fee included, and is read only from
// a Horizon that does not serve GET /ledgers/{seq}/transactions) and the fee the network
// last named in a txINSUFFICIENT_FEE answer (its feeCharged, for FeeHintTTL). A rate that does
// not fit MAX_FEE_STROOPS is refused before anything is signed: 503 FEE_ABOVE_CAP. bidRate is
// the one place the rate is computed; a replacement by fee (replace.go, transfer.Replacer) passes
// core's minimum there: the same signed inner transaction in a new fee bump at 10x the queued
// rate per slot, only while the lane is surge priced, and for a classic envelope only when the
// latest ledger included a transaction paid by someone other than this deployment at or above
// its rate (replace_own.go: its own bids alone are no reason to outbid them), never above
// MAX_FEE_STROOPS. Surge priced
// means a recent ledger charged above the base fee per slot, read as each backend's fee stats
// count a fee bump (horizonChain.surgeShown: any of the last 5 ledgers' classic clearing rate
// above the base fee; rpcChain.surgeShown, surge.go: at up to twice its rate, the latest
// ledger's classic transactions, or for the Soroban lane its transaction set's Soroban base fee,
// deciding where the window cannot tell).
//
// Funds before sending (funds.go, feeguard.go): Prepare refuses, with nothing sent, what the
// paying side cannot pay. The vault's trustline for a classic withdraw must exist, be authorized
// and hold the amount above its selling liabilities (else VAULT_UNDERFUNDED, as the payment's
// apply would fail op_src_no_trust, op_src_not_authorized or op_underfunded). The fee payer must
// cover the envelope's maximum fee with its available balance (stellar-core's getAvailableBalance:
// balance - reserve - selling liabilities): the vault when it is the source (else
// VAULT_UNDERFUNDED), the fee account on top of the fees it may have queued when it pays a fee
// bump (else FEE_ACCOUNT_UNDERFUNDED; TransactionQueue::canAdd). Queued fees are at most one
// envelope per channel whose lease is held or quarantined: this process's at their exact maximum
// fee, another process's at MAX_FEE_STROOPS, read from the lease store (LeaseReader) only when the
// fee account is within (channels - 1) x MAX_FEE_STROOPS of it (feeGuard says why that is sound
// across Lambda environments). The entries come in the getLedgerEntries that reads the source's
// sequence number (Horizon: GET /accounts in parallel); the base reserve from the latest ledger
// read anyway. A FAILED inclusion stays the backstop (transfer.SourceShortfall): the balance may
// change between the read and the ledger.
//
// Batches (batch.go, destinations.go; internal/transfer/doc.go, "Batches"): PrepareBatch builds
// one classic transaction paying up to MaxBatchPayments withdrawals, operation i paying request
// i with the vault as its source, from the same transaction source, bid, signatures, fee bump and
// funds check as one transfer (buildClassic, seal, checkFunds per asset on the batch's sum: a vault
// short of a sum refuses with what it can pay of every asset, transfer.BatchShortfallError, and
// the domain builds the batch again from the payments it covers; this package drops none); a
// batch's fee bump bids (n+1) slots. CheckDestinations reads every destination before the batch is
// built, as stellar-core will judge its payment, in one getLedgerEntries (Horizon: the accounts
// concurrently). BatchOutcomes and LookupOutcomes give each operation's result and whose it is
// (OpSide: landed, a neighbour's failure, the destination's, the paying side's, its own).
//
// A day's chain side (dayscan.go, dayevents.go; transfer.DayReader): the daily reconciliation's
// reading of one UTC day, its ledgers found by close time (a binary search, one transaction a
// probe), the transactions that concern the vault found by their CAP-67 events (getEvents: a
// transfer, mint, burn or clawback naming the vault or a vault contract, a vault contract's own
// event, a fee paid by the vault or the fee account) and read with getTransaction: the vault's
// payments (fee bumps, channel accounts' transactions whose operation source is the vault, muxed
// destinations, memos), the vault contracts' calls in contract mode, and the vault's trustline
// changes from the metadata. Its calls follow the vault's traffic, not the network's. A
// Horizon-only ledger refuses it: Horizon's /accounts/{id}/payments would list classic payments,
// but neither the metadata's balance changes nor a contract's calls.
//
// The day's ledgers are those whose close time is in [00:00:00, 24:00:00) UTC (a ledger closed at
// midnight is the next day's), found by a binary search over RPC's history, each probe reading one
// transaction's close time with getTransactions (getLedgers for a ledger without one). Since
// protocol 23 every classic payment, lumens included, emits the asset contract's transfer, mint,
// burn or clawback event naming both accounts, and every transaction a fee event for its fee
// payer, failed ones too (CAP-67, which stellar-rpc always ingests). Each transaction found is
// decoded with go-stellar-sdk's xdr: a fee bump's inner transaction (a transfer matches by its
// inner hash or any outer hash), each operation with its own source, so a channel account's
// transaction whose payment's source is the vault is the vault's. SetOptions, ChangeTrust,
// sponsorship and the contract mode's own restores move nothing and are never listed; any other
// vault operation that can move a balance is otherOperations. Not read: a stranger's failed
// attempt to pay the vault (it moved nothing), a failed transaction whose fee an account other than
// the vault and the fee account paid (a fee account replaced during the day).
//
// Its cost: RPC serves its history-retention-window, 120,960 ledgers (about 7 days) by default
// (stellar-rpc cmd/stellar-rpc/internal/config/options.go, SevenDayOfLedgers); an older day is
// HISTORY_NOT_COVERED, never reported from part of its ledgers. A day costs about 2 x log2(RPC's
// history) probes, getEvents pages of 1,000 events (at least one per 10,000 ledgers, stellar-rpc's
// scan limit: 2 for a pubnet day) and one getTransaction per transaction of the vault's, eight in
// flight. Measured on the local network (go test -run '^$' -bench BenchmarkVaultDayCalls
// -benchtime 3x ./internal/stellar/, load average 9 to 11 on 2 cores), a day of 40 ledgers with N
// vault payments among M background payments, reading every transaction (getTransactions) against
// the events (getEvents), as built:
//
//	N, M        every transaction read             the events
//	10, 0       15 calls, 36.5 KB                  35 calls, 56 KB (quiet ledgers have no transaction to probe)
//	10, 20,000  112 calls, 14.3 MB, 1.32 s         28 calls, 52 KB, 0.11 s
//	40, 20,000  112 calls, 14.3 MB, 0.79 s         58 calls, 144 KB, 0.14 s
//
// TestVaultDayCallsFollowTheVaultNotTheNetwork holds the count exactly.
//
// The vault contract (soroban.go): since protocol 23 an archived balance is restored by the call
// itself; on the local network a withdrawal that restores cost 60,866 stroops against 35,866.
//
// Every RPC call uses its own rpcclient (transport.go): that is how Send learns whether a failed
// request was ever written (transfer.ErrNotSent), and how a call returns when its context ends.
package stellar
