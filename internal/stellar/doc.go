// Package stellar implements transfer.Ledger on a Stellar network through Stellar RPC
// (https://developers.stellar.org/docs/data/apis/rpc), with go-stellar-sdk for everything
// Stellar: strkey addresses, keypairs, txnbuild envelopes, xdr results and the rpcclient.
//
// It reports facts (what the network answered, what the ledger holds); the transfer package
// decides what they mean for a transfer (internal/transfer/doc.go, "Proof rules" and
// "Classification"). Amounts and fees are in
// stroops (10^-7 of a unit), times are epoch seconds or time.Time in UTC.
//
// First cut (issue 3): the vault is a classic account; a withdraw is one Payment from it, signed by
// its key, with the vault as the transaction source. Channel accounts and fee bumps (issue 5) slot
// in behind the source seam (source.go) and Envelope.OuterHash.
//
// Signing keys come from one secret document (keys.go), or, with SIGNER=kms, the vault's and the
// fee account's keys are AWS KMS Ed25519 keys that sign over KMS's Sign API (signer.go: Signer,
// KMSSigner, KMSKeys; README.md, "Signing keys in KMS"); secret seeds never appear in errors, logs
// or formatted output of this package's types. CheckSigners (signercheck.go) reads the accounts the
// keys sign for and refuses, with a *SignerError naming the account, the key and the weights, a
// key whose weight there is below a threshold stellar-core will check its signatures against.
//
// Supported backends (versions.go; README.md, "Supported Stellar RPC and Horizon versions"):
// stellar-rpc 23.0.0 and later, Horizon 22.0.0 and later, checked by CheckNetwork at start (an
// *UnsupportedVersionError otherwise). Before stellar-rpc 25.0.0 getLatestLedger has no closeTime:
// RPCLedger reads that ledger's close time with getLedgers (rpcLatest), which keeps the proof of
// death sound whichever order getTransaction reads in.
//
// Fees (fees.go): each envelope bids, per operation slot, the highest of the base fee, its
// surge-pricing lane's recent fees at FEE_PERCENTILE (RPC getFeeStats inclusionFee for payments,
// sorobanInclusionFee for contract calls; Horizon /fee_stats fee_charged) and the fee the network
// last named in a txINSUFFICIENT_FEE answer (its feeCharged, for FeeHintTTL). A rate that does
// not fit MAX_FEE_STROOPS is refused before anything is signed: 503 FEE_ABOVE_CAP. bidRate is
// the one place the rate is computed; a replacement by fee (replace.go, transfer.Replacer) passes
// core's minimum there: the same signed inner transaction in a new fee bump at 10x the queued
// rate per slot, only while the lane is surge priced, never above MAX_FEE_STROOPS.
//
// Every RPC call uses its own rpcclient (transport.go): that is how Send learns whether a failed
// request was ever written (transfer.ErrNotSent), and how a call returns when its context ends.
package stellar
