package dynamo

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Expired claims have no index of their own: in_flight items share the sparse index gsi1 under
// gsi1pk = ClaimsPartition, sorted by lease expiry. A Scan of the table would read every
// replayable and rejected item kept for the key TTL (a day of traffic) once a minute; the index
// costs one index write per in_flight write (claim, attach envelope, settle: about three per
// transfer) and lets the sweep read exactly the claims whose lease ran out. All claims sit in one
// index partition; past roughly 300 transfers a second that partition's write limit would
// throttle claims, and the partition key should then be sharded (ClaimsPartition#0..n).

// ListExpiredClaims queries gsi1 for in_flight items whose lease expired before now, earliest
// expiry first, at most limit items (DefaultListLimit when limit <= 0) after cursor ("" for the
// start); it returns the next cursor, "" when there is no more. Like ListInDoubt it reads an
// eventually consistent index: re-read an item with Get before acting on it.
func (s *Store) ListExpiredClaims(ctx context.Context, now time.Time, limit int, cursor string) ([]transfer.Record, string, error) {
	// Sort keys are "<lease expiry>#pk": every one below "<now>" expired before now.
	below := inDoubtSortKey(now, "")
	return s.queryIndex(ctx, "list expired claims", ClaimsPartition, &below, limit, cursor)
}

// ListQueued queries gsi1 for queued items (async transfers waiting for the submitter) queued
// before before, oldest first, at most limit items (DefaultListLimit when limit <= 0) after cursor
// ("" for the start); it returns the next cursor, "" when there is no more. The sweep passes
// now minus its grace, so that a message still on its way is not sent twice for nothing. The index
// is eventually consistent: re-read an item with Get before acting on it.
func (s *Store) ListQueued(ctx context.Context, before time.Time, limit int, cursor string) ([]transfer.Record, string, error) {
	below := inDoubtSortKey(before, "")
	return s.queryIndex(ctx, "list queued", QueuedPartition, &below, limit, cursor)
}

// DecodeItem maps a stored item (for example a DynamoDB stream record's image, converted to the
// SDK's types) to a transfer record. A malformed item is an error naming its key; it never panics.
func DecodeItem(av map[string]types.AttributeValue) (transfer.Record, error) {
	return unmarshalRecord(av)
}

// EncodeItem maps a record to the item the Store would write (for tests and tools that build
// stream records). It refuses the records the Store refuses.
func EncodeItem(rec transfer.Record) (map[string]types.AttributeValue, error) {
	return marshalRecord(rec)
}
