package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// Limits (doc.go, "Limits"; README.md, "Configuration", LIMITS). Each asset may cap the amount
// of one transfer, what one wallet moves in a UTC day and what every wallet together moves in a
// UTC day. The per-transfer maximum is checked before anything is written; the daily totals are
// counters the claim charges in the same atomic write that claims the key (Store.Claim with
// Record.Charges), so no two claims, in one process or in many, can both pass a cap that only
// one of them fits under. A charge is given back (Counters.GiveBack) once nothing can move under
// its claim (GiveBackOf).

// Error codes of the limits (README.md, "Problem types").
const (
	// CodeAmountAboveLimit: the amount is above a limit of its asset that no day can pass (the
	// per-transfer maximum, or a daily cap lower than the amount); nothing was written.
	CodeAmountAboveLimit = "AMOUNT_ABOVE_LIMIT"
	// CodeDailyLimitExceeded: the claim would have taken a daily total of its asset above its cap
	// (the wallet's or the asset's); nothing was claimed, the key is free, and RetryAfter is the
	// next UTC midnight, when the day's counter starts again.
	CodeDailyLimitExceeded = "DAILY_LIMIT_EXCEEDED"
)

// KindLimited: a limit refuses the request now, and will not later (a daily total frees at the
// next UTC midnight). internal/api answers it 429.
const KindLimited Kind = "limited"

// AssetLimits are one asset's limits, in stroops; 0 means that limit is not set.
type AssetLimits struct {
	// PerTransfer is the largest amount of one transfer.
	PerTransfer int64
	// WalletDaily is the most the transfers of one wallet may move in one UTC day.
	WalletDaily int64
	// AssetDaily is the most every transfer of the asset together may move in one UTC day.
	AssetDaily int64
}

// Limits maps an asset code, spelled as configured, to its limits (internal/config, LIMITS). An
// asset without an entry, or a nil Limits, has none: its claims carry no charge and cost what they
// cost without limits. Every transfer of the asset counts, deposits and withdrawals alike.
type Limits map[string]AssetLimits

// LimitScope names the daily total a charge counts against.
type LimitScope string

const (
	// LimitWallet: the wallet's daily total of the asset.
	LimitWallet LimitScope = "wallet"
	// LimitAsset: the asset's daily total over every wallet.
	LimitAsset LimitScope = "asset"
)

// CounterPrefix starts the key of every daily counter item; no transfer key (StoreKey) has it.
const CounterPrefix = "limit:"

// CounterKeep is how long a counter item is kept after the end of its day (its TTL): long enough
// that a give-back of a transfer released a day or two late still finds it, short enough that a
// year of days leaves few items behind.
const CounterKeep = 72 * time.Hour

// Charge is what one claim adds to one daily counter: Stroops, refused if the counter's total
// would then be above Cap. The claim's item keeps its charges (Record.Charges) so that they can be
// given back with exactly what was added.
type Charge struct {
	// Counter is the counter item's key: "limit:wallet:<WalletHash of the wallet's scope, the
	// G... account of an M... address (Wallet.Scope)>:<asset>:<day>" or
	// "limit:asset:<asset>:<day>", day as 2006-01-02 (UTC).
	Counter string
	Scope   LimitScope
	Asset   string
	// Day is the claim's UTC day, 2006-01-02.
	Day string
	// Stroops is the transfer's amount; Cap the counter's cap, both in stroops.
	Stroops int64
	Cap     int64
}

// Frees is when the charge's counter stops counting: the UTC midnight that ends its day.
func (c Charge) Frees() time.Time {
	d, err := time.Parse(time.DateOnly, c.Day)
	if err != nil {
		return time.Time{}
	}
	return d.Add(24 * time.Hour)
}

// ExpiresAt is the counter item's TTL, epoch seconds: CounterKeep after its day ends.
func (c Charge) ExpiresAt() int64 { return c.Frees().Add(CounterKeep).Unix() }

// RequestToken is a DynamoDB ClientRequestToken (1 to 36 characters) unique to the claim claimID:
// the first 32 hex of sha256("claim:" + claimID). A write sent again under it after its answer was
// lost is applied once.
func RequestToken(claimID string) string {
	sum := sha256.Sum256([]byte("claim:" + claimID))
	return hex.EncodeToString(sum[:16])
}

// CheckAmount refuses req when its amount is above a limit of its asset that no day can pass:
// the per-transfer maximum, or a daily cap (a transfer above the wallet's or the asset's daily cap
// would be refused every day). Errors: *LimitError with Code AMOUNT_ABOVE_LIMIT.
func (l Limits) CheckAmount(req Request) error {
	al, ok := l[req.Asset]
	if !ok {
		return nil
	}
	for _, c := range []struct {
		scope string
		cap   int64
	}{{"per-transfer", al.PerTransfer}, {string(LimitWallet) + " daily", al.WalletDaily}, {string(LimitAsset) + " daily", al.AssetDaily}} {
		if c.cap > 0 && req.Stroops > c.cap {
			return &LimitError{Code: CodeAmountAboveLimit, Limit: c.scope, Asset: req.Asset, Cap: c.cap}
		}
	}
	return nil
}

// Charges are the daily counters a claim of req at now adds to: the wallet's and the asset's for
// now's UTC day, each only when its cap is set; nil when the asset has no daily limit.
func (l Limits) Charges(req Request, now time.Time) []Charge {
	al, ok := l[req.Asset]
	if !ok {
		return nil
	}
	day := now.UTC().Format(time.DateOnly)
	var out []Charge
	if al.WalletDaily > 0 {
		out = append(out, Charge{Counter: CounterPrefix + "wallet:" + WalletHash(req.Wallet().Scope()) + ":" + req.Asset + ":" + day,
			Scope: LimitWallet, Asset: req.Asset, Day: day, Stroops: req.Stroops, Cap: al.WalletDaily})
	}
	if al.AssetDaily > 0 {
		out = append(out, Charge{Counter: CounterPrefix + "asset:" + req.Asset + ":" + day,
			Scope: LimitAsset, Asset: req.Asset, Day: day, Stroops: req.Stroops, Cap: al.AssetDaily})
	}
	return out
}

// LimitError (KindUnacceptable for AMOUNT_ABOVE_LIMIT, terminal; KindLimited for
// DAILY_LIMIT_EXCEEDED, retryable after RetryAfter): a limit refused the transfer before anything
// was claimed. Store.Claim returns it with Code DAILY_LIMIT_EXCEEDED and the Charge that did not
// fit; the orchestrator sets RetryAfter from its clock.
type LimitError struct {
	Code string
	// Limit names the limit: "per-transfer", "wallet daily" or "asset daily" for
	// AMOUNT_ABOVE_LIMIT; "wallet" or "asset" (LimitScope) for DAILY_LIMIT_EXCEEDED.
	Limit string
	Asset string
	// Cap is the limit in stroops.
	Cap int64
	// Charge is the charge that did not fit (DAILY_LIMIT_EXCEEDED).
	Charge     Charge
	RetryAfter time.Duration
}

// dailyLimitError is Store.Claim's refusal of charge c.
func dailyLimitError(c Charge) *LimitError {
	return &LimitError{Code: CodeDailyLimitExceeded, Limit: string(c.Scope), Asset: c.Asset, Cap: c.Cap, Charge: c}
}

// DailyLimitError is what a Store's Claim returns when charge c would take its counter above
// its cap: nothing was written.
func DailyLimitError(c Charge) error { return dailyLimitError(c) }

func (e *LimitError) Error() string {
	return fmt.Sprintf("%s: %s limit of %s %s", e.Code, e.Limit, FormatStroops(e.Cap), e.Asset)
}

// Problem implements ProblemError. LimitCap is the cap as a canonical decimal amount.
func (e *LimitError) Problem() Problem {
	p := Problem{Code: e.Code, Limit: e.Limit, LimitCap: FormatStroops(e.Cap)}
	if e.Code == CodeAmountAboveLimit {
		p.Kind, p.Classification = KindUnacceptable, Terminal
		p.Detail = fmt.Sprintf("The amount is above the %s limit of %s %s; nothing was submitted.", e.Limit, p.LimitCap, e.Asset)
		return p
	}
	p.Kind, p.Classification, p.RetryAfter = KindLimited, Retryable, e.RetryAfter
	day := e.Charge.Day
	p.Detail = fmt.Sprintf("This transfer would take the %s's daily total of %s on %s (UTC) above its limit of %s; nothing was submitted and the key is free. The limit frees at %s.",
		e.Limit, e.Asset, day, p.LimitCap, e.Charge.Frees().Format(time.RFC3339))
	return p
}

// FormatStroops is n stroops as a canonical decimal amount: no leading zeros, no trailing
// fractional zeros ("1000.5", "0.0000001").
func FormatStroops(n int64) string {
	if n < 0 {
		return "-" + FormatStroops(-n)
	}
	whole, frac := n/StroopsPerUnit, n%StroopsPerUnit
	s := strconv.FormatInt(whole, 10)
	if frac == 0 {
		return s
	}
	f := fmt.Sprintf("%07d", frac)
	for f[len(f)-1] == '0' {
		f = f[:len(f)-1]
	}
	return s + "." + f
}

// Counters holds the limits' daily counters beside the transfer items (internal/dynamo's Store,
// transfertest's Store). Store.Claim charges them; GiveBack returns a charge.
type Counters interface {
	// Counter is the total charged to the counter key now, in stroops (0 when it has no item).
	Counter(ctx context.Context, key string) (int64, error)
	// GiveBack subtracts the charges of the claim claimID from their counters, at most once per
	// claimID however often it is called (a stream record is delivered at least once).
	GiveBack(ctx context.Context, claimID string, charges []Charge) error
}

// GiveBackOf says which charges a change of a transfer item gives back, and under which claim:
// the charges of an incarnation under which nothing moved and nothing can move any more. old and
// next are the item before and after the change (nil: no item). That is:
//
//   - an item that becomes rejected (a transaction FAILED, which moves no funds, or a queued
//     request refused before building): next's charges;
//   - an item deleted while in_flight, queued or in_doubt (a release: its envelope never sent,
//     refused or proven dead, or an operator's discard), deleted only when nothing can land
//     (doc.go, "The item"): old's charges.
//
// Every other change keeps the charge: a settlement with SUCCESS moved the funds, an in_doubt
// item may still land, a requeued async item will run again, and a settled item's TTL removal
// changes nothing (a rejected or cancelled one was given back when it became so). A queued item
// that becomes cancelled (status "cancelled", which a cancellation writes: nothing is ever built
// or sent under it) gives its charge back as a rejected one does.
func GiveBackOf(old, next *Record) (claimID string, charges []Charge) {
	switch {
	case next != nil && nothingMoved(next.Status) && len(next.Charges) > 0 &&
		(old == nil || old.ClaimID != next.ClaimID || !nothingMoved(old.Status)):
		return next.ClaimID, next.Charges
	case next == nil && old != nil && len(old.Charges) > 0 &&
		(old.Status == StatusInFlight || old.Status == StatusQueued || old.Status == StatusInDoubt):
		return old.ClaimID, old.Charges
	}
	return "", nil
}

// nothingMoved reports whether an item in status s ended its transfer without moving funds:
// rejected, or cancelled (a queued transfer no submitter took; the status a cancellation writes).
func nothingMoved(s Status) bool { return s == StatusRejected || s == StatusCancelled }
