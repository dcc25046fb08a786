package dynamo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A lasting record (transfer.Archive; doc.go, "Table layout") is an item of its own in the
// transfer table, one per incarnation: pk ArchiveKey(storeKey, claimId), "record:" + the store
// key without its "transfer:" prefix + "#" + the claim ID, so no claim, Get or conditional write
// of a transfer item ever reads or matches one. It holds the item's attributes as of its settled
// state (never envelopeXdr, leaseOwner, leaseExpiresAt, fingerprint, gsi1pk or gsi1sk) and:
//   - status: replayable, rejected, cancelled or released (transfer.StatusReleased);
//   - replayUntil (N, epoch s): the item's expiresAt, the end of its replay window;
//   - expiresAt (N, epoch s): the record's own TTL, transfer.Archive.RetainUntil; absent: kept
//     for ever;
//   - gsi1pk ArchiveDayPartition of its settlement (transfer.Archive.SettledAt) and gsi1sk
//     its time (RFC 3339 UTC with milliseconds): the day's records, oldest first (ListArchivedDay), which the daily
//     reconciliation reads. gsi1 already exists, so the records need one index added, not two
//     (CloudFormation creates one global secondary index per stack update);
//   - gsi3pk (the store key) and gsi3sk (its createdAt): the records index, gsi3, which
//     LatestArchive queries newest first;
//   - gsi2pk (the wallet's hash, as the item's) and gsi2sk ("<createdAt>#<store key>#"), so the
//     wallet's history lists it right before its live item (ListByWallet).
//
// No claimId attribute (the pk holds it) and no channel (transfer.ArchivedForm): a typical record
// (a key of 20 characters, a fee-bumped transfer) is under 1 KB, one write unit in the table and
// one in each of its three indexes (archive_cost_test.go).

// ArchivePrefix starts every record item's pk.
const ArchivePrefix = "record:"

// ArchiveDayPartition is the gsi1pk of the records settled on t's UTC day: "records:YYYY-MM-DD".
// No live item's gsi1pk starts so (InDoubtPartition, ClaimsPartition, QueuedPartition).
func ArchiveDayPartition(t time.Time) string { return "records:" + transfer.ArchiveDay(t) }

// ListArchivedDay queries gsi1's partition of day's records (ArchiveDayPartition), oldest
// settlement first, at most limit (DefaultListLimit when limit <= 0) after cursor. The cursor is a
// gsi1 position as ListInDoubt's, refused (ErrBadCursor, before any request) unless its gsi1pk is
// this day's partition, its pk a record's (ArchiveKey of a valid store key and claim ID) and its
// gsi1sk a time of that day (sortKeyTimeLayout).
func (s *Store) ListArchivedDay(ctx context.Context, day time.Time, limit int, cursor string) ([]transfer.Archive, string, error) {
	start := func(partition, cursor string) (map[string]types.AttributeValue, error) {
		return archiveStart(partition, day, cursor)
	}
	return queryGSI1(ctx, s, "list archived day", ArchiveDayPartition(day), nil, limit, cursor, start, unmarshalArchive)
}

// archiveStart is the ExclusiveStartKey that cursor names in day's partition of records on gsi1,
// nil for "": ErrBadCursor unless the cursor's gsi1pk is partition, its pk a record's and its
// gsi1sk a time of day.
func archiveStart(partition string, day time.Time, cursor string) (map[string]types.AttributeValue, error) {
	if cursor == "" {
		return nil, nil
	}
	var p indexPosition
	if err := decodeCursor(cursor, &p); err != nil {
		return nil, err
	}
	_, _, ok := splitArchiveKey(p.PK)
	switch {
	case p.GSI1PK != partition:
		return nil, badCursor("a cursor of another listing")
	case !ok || !validDayTime(p.GSI1SK, day):
		return nil, badCursor("malformed position")
	}
	return p.startKey(), nil
}

// validDayTime reports whether sk is a time in sortKeyTimeLayout that formats back to itself and
// falls on day's UTC day.
func validDayTime(sk string, day time.Time) bool {
	at, err := time.Parse(sortKeyTimeLayout, sk)
	return err == nil && at.UTC().Format(sortKeyTimeLayout) == sk && transfer.ArchiveDay(at) == transfer.ArchiveDay(day)
}

// Attributes of a record item besides the transfer item's.
const (
	// AttrReplayExpiresAt is the end of the archived item's replay window, epoch seconds (N).
	AttrReplayExpiresAt = "replayUntil"
)

// claimIDShape is what a record's pk may end with: a claim ID as transfer.NewClaimID writes it (32
// hex), or any other ID without "#", within 64 characters of the key alphabet.
var claimIDShape = regexp.MustCompile(`^[A-Za-z0-9._:~-]{1,64}$`)

// ArchiveKey is the pk of the record of storeKey's incarnation claimID.
func ArchiveKey(storeKey, claimID string) string {
	return ArchivePrefix + strings.TrimPrefix(storeKey, "transfer:") + "#" + claimID
}

// archiveSortKey is a record's gsi2sk: its item's gsi2sk, then "#". The key alphabet has no
// character below "#", so no other item's gsi2sk falls between a record's and its live item's:
// in descending order the record comes right before it. (Two incarnations of a key claimed in
// one millisecond, which their replay window rules out, would share it; an index sort key need
// not be unique, and the pk, in every cursor, tells them apart.)
func archiveSortKey(rec transfer.Record) string {
	return historySortKey(rec.CreatedAt, rec.StoreKey) + "#"
}

// splitArchiveKey returns the store key and claim ID of a record's pk, ok false unless pk is one
// ArchiveKey writes for a valid store key (transfer.ValidStoreKey) and claim ID.
func splitArchiveKey(pk string) (storeKey, claimID string, ok bool) {
	rest, found := strings.CutPrefix(pk, ArchivePrefix)
	if !found || len(pk) > maxPartitionKeyBytes {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '#')
	if i < 0 {
		return "", "", false
	}
	storeKey, claimID = "transfer:"+rest[:i], rest[i+1:]
	return storeKey, claimID, transfer.ValidStoreKey(storeKey) && claimIDShape.MatchString(claimID)
}

// PutArchive writes a's record item: PutItem conditional on `attribute_not_exists(pk) OR
// version < :v`, so a repeated or stale delivery (a lower or equal version of the incarnation) is
// a no-op answered nil. A record that is not archivable, has no claim ID matching claimIDShape or
// no createdAt is transfer.ErrNotArchivable (wrapped) before any request. One request, of the
// record's size (about 1 KB: one write unit, plus one to each of gsi1, gsi2 and gsi3).
func (s *Store) PutArchive(ctx context.Context, a transfer.Archive) error {
	av, err := marshalArchive(a)
	if err != nil {
		return err
	}
	expr, err := expression.NewBuilder().WithCondition(
		expression.AttributeNotExists(expression.Name(AttrPK)).
			Or(expression.Name("version").LessThan(expression.Value(a.Record.Version))),
	).Build()
	if err != nil {
		return fmt.Errorf("dynamo: put archive: build condition: %w", err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      av,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	if _, stale := errors.AsType[*types.ConditionalCheckFailedException](err); stale {
		return nil // this version, or a later one, is already kept
	}
	if err != nil {
		return fmt.Errorf("dynamo: put archive %q: %w", a.Record.StoreKey, err)
	}
	return nil
}

// LatestArchive queries gsi3 for storeKey's records, newest incarnation first, one item; it is
// transfer.ErrNotFound (wrapped) when there is none. The index is eventually consistent.
func (s *Store) LatestArchive(ctx context.Context, storeKey string) (transfer.Archive, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(AttrGSI3PK).Equal(expression.Value(storeKey))).Build()
	if err != nil {
		return transfer.Archive{}, fmt.Errorf("dynamo: latest archive: build key condition: %w", err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(RecordIndex),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(1),
	})
	if err != nil {
		return transfer.Archive{}, fmt.Errorf("dynamo: latest archive %q: %w", storeKey, err)
	}
	if len(out.Items) == 0 {
		return transfer.Archive{}, fmt.Errorf("dynamo: latest archive %q: %w", storeKey, transfer.ErrNotFound)
	}
	return unmarshalArchive(out.Items[0])
}

var _ transfer.ArchiveStore = (*Store)(nil)

// marshalArchive maps a to its record item (the layout above).
func marshalArchive(a transfer.Archive) (map[string]types.AttributeValue, error) {
	rec := a.Record
	switch {
	case rec.StoreKey == "":
		return nil, fmt.Errorf("dynamo: archive has no store key: %w", transfer.ErrNotArchivable)
	case !transfer.Archivable(rec.Status):
		return nil, fmt.Errorf("dynamo: archive %q of a %s item: %w", rec.StoreKey, rec.Status, transfer.ErrNotArchivable)
	case !claimIDShape.MatchString(rec.ClaimID):
		return nil, fmt.Errorf("dynamo: archive %q without a valid claim ID: %w", rec.StoreKey, transfer.ErrNotArchivable)
	case rec.CreatedAt.IsZero():
		return nil, fmt.Errorf("dynamo: archive %q without createdAt: %w", rec.StoreKey, transfer.ErrNotArchivable)
	case a.RetainUntil < 0:
		return nil, fmt.Errorf("dynamo: archive %q: negative retention %d", rec.StoreKey, a.RetainUntil)
	}
	status := rec.Status
	// The item mapping checks a live item's invariants; a record is none, so it is mapped as a
	// replayable item and its own attributes are set after.
	shape := transfer.ArchivedForm(rec)
	shape.Status, shape.ExpiresAt = transfer.StatusReplayable, 0
	av, err := marshalRecord(shape)
	if err != nil {
		return nil, err
	}
	// The claim ID is in the pk; a record's gsi1 keys are its own (below), never an in-doubt one's.
	for _, name := range []string{AttrGSI1PK, AttrGSI1SK, TTLAttribute, AttrClaimID} {
		delete(av, name)
	}
	av[AttrPK] = &types.AttributeValueMemberS{Value: ArchiveKey(rec.StoreKey, rec.ClaimID)}
	av["status"] = &types.AttributeValueMemberS{Value: string(status)}
	if rec.ExpiresAt != 0 {
		av[AttrReplayExpiresAt] = &types.AttributeValueMemberN{Value: strconv.FormatInt(rec.ExpiresAt, 10)}
	}
	if a.RetainUntil != 0 {
		av[TTLAttribute] = &types.AttributeValueMemberN{Value: strconv.FormatInt(a.RetainUntil, 10)}
	}
	if settled := a.SettledAt(); !settled.IsZero() {
		// The day's records (ListArchivedDay), in gsi1 under a partition of their own, sorted by
		// the settlement time alone: an index sort key need not be unique, the pk in every cursor
		// tells equal times apart, and a short key keeps a typical record within one write unit.
		av[AttrGSI1PK] = &types.AttributeValueMemberS{Value: ArchiveDayPartition(settled)}
		av[AttrGSI1SK] = &types.AttributeValueMemberS{Value: settled.UTC().Format(sortKeyTimeLayout)}
	}
	av[AttrGSI3PK] = &types.AttributeValueMemberS{Value: rec.StoreKey}
	av[AttrGSI3SK] = &types.AttributeValueMemberS{Value: rec.CreatedAt.UTC().Format(sortKeyTimeLayout)}
	delete(av, AttrGSI2SK)
	if _, ok := av[AttrGSI2PK]; ok {
		// A record whose history sort key would pass DynamoDB's limit (a client key near
		// transfer.MaxKeyLengthBound) stays out of the history; GET still finds it.
		if sk := archiveSortKey(rec); len(sk) <= maxSortKeyBytes {
			av[AttrGSI2SK] = &types.AttributeValueMemberS{Value: sk}
		} else {
			delete(av, AttrGSI2PK)
		}
	}
	return av, nil
}

// unmarshalArchive maps a record item back; a malformed one is an error naming its key.
func unmarshalArchive(av map[string]types.AttributeValue) (transfer.Archive, error) {
	pk, _ := stringAttr(av, AttrPK)
	storeKey, claimID, ok := splitArchiveKey(pk)
	if !ok {
		return transfer.Archive{}, fmt.Errorf("dynamo: malformed record item: pk is not a record's")
	}
	status, _ := stringAttr(av, "status")
	if !transfer.Archivable(transfer.Status(status)) {
		return transfer.Archive{}, fmt.Errorf("dynamo: malformed record item %q: status %q", pk, status)
	}
	shape := make(map[string]types.AttributeValue, len(av))
	for k, v := range av {
		shape[k] = v
	}
	shape[AttrPK] = &types.AttributeValueMemberS{Value: storeKey}
	shape["status"] = &types.AttributeValueMemberS{Value: string(transfer.StatusReplayable)}
	delete(shape, TTLAttribute)
	rec, err := unmarshalRecord(shape)
	if err != nil {
		return transfer.Archive{}, err
	}
	if rec.ClaimID != "" && rec.ClaimID != claimID {
		return transfer.Archive{}, fmt.Errorf("dynamo: malformed record item %q: claimId %q", pk, rec.ClaimID)
	}
	rec.ClaimID, rec.Status, rec.Archived = claimID, transfer.Status(status), true
	a := transfer.Archive{}
	if rec.ExpiresAt, err = numberAttr(av, AttrReplayExpiresAt); err != nil {
		return transfer.Archive{}, fmt.Errorf("dynamo: malformed record item %q: %w", pk, err)
	}
	if a.RetainUntil, err = numberAttr(av, TTLAttribute); err != nil {
		return transfer.Archive{}, fmt.Errorf("dynamo: malformed record item %q: %w", pk, err)
	}
	a.Record = rec
	return a, nil
}

// numberAttr is av[name] as an int64, 0 when absent.
func numberAttr(av map[string]types.AttributeValue, name string) (int64, error) {
	v, ok := av[name]
	if !ok {
		return 0, nil
	}
	n, isN := v.(*types.AttributeValueMemberN)
	if !isN {
		return 0, fmt.Errorf("attribute %q is not a number", name)
	}
	i, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %q: %w", name, err)
	}
	return i, nil
}
