package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
)

// A wallet's history (README.md, "The HTTP API": GET /wallets/{walletAddress}/transfers): the
// wallet's items, newest first, read from an index whose key is WalletHash, never the address
// itself (internal/dynamo/doc.go, "Table layout": gsi2).

// Page sizes of a history listing.
const (
	// DefaultHistoryLimit is the page size when the client names none.
	DefaultHistoryLimit = 20
	// MaxHistoryLimit is the largest page a client may ask for.
	MaxHistoryLimit = 100
)

// Codes of a history listing's refusals (KindMalformed, terminal; README.md, "Problem types").
const (
	// CodeLimitInvalid: limit is not an integer from 1 to MaxHistoryLimit.
	CodeLimitInvalid = "LIMIT_INVALID"
	// CodeCursorInvalid: cursor is not one the service issued for this wallet.
	CodeCursorInvalid = "CURSOR_INVALID"
)

// walletHashDomain separates WalletHash from every other hash of an address: StoreKey hashes the
// bare upper-case address, so the two never coincide even for the same wallet.
const walletHashDomain = "wallet:"

// WalletHash is the history index's partition key of wallet: the lower-case hex sha256 of
// "wallet:" + the upper-case address, 64 characters. The store keeps it on every item of the
// wallet (written by the claim, kept by every later write), so a wallet's items are found without
// the plain address ever being a key.
func WalletHash(wallet string) string {
	sum := sha256.Sum256([]byte(walletHashDomain + strings.ToUpper(wallet)))
	return hex.EncodeToString(sum[:])
}

// HistoryStore lists a wallet's items. internal/dynamo implements it on the sparse index gsi2.
type HistoryStore interface {
	// ListByWallet reads at most limit (1 to MaxHistoryLimit) items of wallet (canonical, upper
	// case; a scope, Wallet.Scope: the items of an account include its muxed addresses'), newest
	// CreatedAt first, after cursor ("" for the first page); it returns the next
	// cursor, "" when there is no more. A cursor the store did not issue for this wallet is
	// ErrBadCursor (wrapped). The records may hold only what a listing shows: StoreKey, Status,
	// Request, ClientKey, Result, ExpiresAt, CreatedAt and UpdatedAt, and Archived for a lasting
	// record (each incarnation listed once: its live item while it exists, else its record;
	// archive.go). The index is eventually
	// consistent: an item may show a little after a write, in its state before that write. The
	// records are for reading only: never build a write from one (it lacks ClaimID and Version, so
	// its Expect matches no stored item).
	ListByWallet(ctx context.Context, wallet string, limit int, cursor string) ([]Record, string, error)
}

// HistoryEntry is one transfer of a wallet's history: its View (status, hash, ledger, in doubt,
// stored rejection) and what was asked.
type HistoryEntry struct {
	View
	// ClientKey is the Idempotency-Key the transfer was posted with.
	ClientKey string
	Operation Operation
	// Amount is the canonical decimal string; Asset the configured code.
	Amount string
	Asset  string
	// CreatedAt is when the key was claimed; UpdatedAt the item's last write (millisecond precision).
	CreatedAt time.Time
	UpdatedAt time.Time
}

// HistoryPage is one page of a wallet's history and the cursor of the next ("" when done).
type HistoryPage struct {
	Entries []HistoryEntry
	Next    string
}

// History lists wallet's transfers (wallet canonical, upper case), newest first: at most limit
// (1 to MaxHistoryLimit) after cursor ("" for the first page). The store lists wallet's scope
// (Wallet.Scope: an account's history holds its muxed addresses' transfers too; doc.go, "Muxed
// wallets"). An item whose replay window has passed (Record.Expired), and a lasting record
// (Record.Archived: the store lists an incarnation once, its live item while it exists, else its
// archive), are listed with OutsideReplayWindow. Any item View would not show to wallet (another
// wallet's: the index is keyed by a hash; another muxed address's, for a muxed wallet) is left
// out; a page may therefore hold fewer than limit entries, or none, and still name a next cursor.
// Errors: *ValidationError LIMIT_INVALID or CURSOR_INVALID (malformed), *UnavailableError
// STORE_UNAVAILABLE; without WalletHistory, an untyped error (no problem of the client's: the
// wiring forgot it).
func (o *Orchestrator) History(ctx context.Context, wallet Wallet, limit int, cursor string) (HistoryPage, error) {
	if limit < 1 || limit > MaxHistoryLimit {
		return HistoryPage{}, LimitInvalid()
	}
	if o.WalletHistory == nil {
		return HistoryPage{}, errors.New("transfer: Orchestrator has no WalletHistory store")
	}
	recs, next, err := o.WalletHistory.ListByWallet(ctx, wallet.Scope(), limit, cursor)
	if errors.Is(err, ErrBadCursor) {
		return HistoryPage{}, CursorInvalid()
	}
	if err != nil {
		return HistoryPage{}, storeUnreadable(err)
	}
	now := o.Clock.Now()
	page := HistoryPage{Entries: make([]HistoryEntry, 0, len(recs)), Next: next}
	for _, rec := range recs {
		// The index is keyed by a hash of the scope; the item's own wallet has the last word.
		if !shows(wallet, rec) {
			continue
		}
		if rec.Archived && rec.ExpiresAt != 0 && now.Unix() >= rec.ExpiresAt {
			continue // a record past its retention (listed with it as ExpiresAt), as View leaves it out
		}
		v := viewOf(rec)
		v.OutsideReplayWindow = rec.Archived || rec.Expired(now)
		page.Entries = append(page.Entries, HistoryEntry{
			View:      v,
			ClientKey: rec.ClientKey,
			Operation: rec.Request.OperationType,
			Amount:    rec.Request.Amount,
			Asset:     rec.Request.Asset,
			CreatedAt: rec.CreatedAt,
			UpdatedAt: rec.UpdatedAt,
		})
	}
	return page, nil
}

// LimitInvalid is the refusal of a history page size outside 1 to MaxHistoryLimit.
func LimitInvalid() *ValidationError {
	return &ValidationError{Code: CodeLimitInvalid, Kind: KindMalformed, Field: "limit",
		Detail: fmt.Sprintf("limit must be an integer from 1 to %d (default %d)", MaxHistoryLimit, DefaultHistoryLimit)}
}

// CursorInvalid is the refusal of a history cursor the service did not issue for this wallet.
func CursorInvalid() *ValidationError {
	return &ValidationError{Code: CodeCursorInvalid, Kind: KindMalformed, Field: "cursor",
		Detail: "cursor is not one this service returned for this wallet; pass nextCursor exactly as received, or leave it out for the first page"}
}
