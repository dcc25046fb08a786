// Package sources chooses the transaction source of each envelope the ledger (internal/stellar)
// builds: the account whose sequence number the envelope consumes, and the keys that sign for it.
// The ledger calls it through one seam, Source (source.go: Acquire before it builds, Bind once it
// has signed, Release once the envelope's fate is decided). There are two:
//
//   - VaultSource: the vault account itself, the mode without channels. stellar-core queues one
//     transaction per source account, so within a process transfers take the vault's slot one at
//     a time, oldest waiter first.
//   - ChannelPool: channel accounts, each leased for one envelope (LeaseStore: internal/dynamo's
//     ChannelLeases, one conditional write per lease) and each lease scheduled on the
//     deployment's channel calendar (TicketStore; channelsched.go argues the design); the
//     channel's transaction is wrapped in a fee bump that the fee account pays. The channel keys
//     are listed in the signing secret or derived from its SEP-5 master seed (ChannelKeys).
//
// Either answers *transfer.UnavailableError CHANNELS_BUSY (503, retryable, nothing built or sent)
// when no source is free within its wait, with a Retry-After computed from the transfers ahead of
// the caller (BusyRetryAfter). Times are time.Time on the configured transfer.Clock; durations are
// ledger intervals (LedgerInterval, DefaultLedgerInterval when unknown).
//
// Why one package for both, apart from the ledger: the vault's slot is a pool of one source, and
// they share the queue of waiters, the busy answer and its Retry-After; neither needs to know how
// an envelope is built, priced or read back, and they import neither the ledger nor a store
// (internal/repotest, houseImportRules). The package is named after what it provides rather than
// after channels: the vault is a source too, and callers count channels in variables of that name.
package sources
