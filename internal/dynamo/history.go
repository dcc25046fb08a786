package dynamo

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A wallet's history is the sparse index gsi2 (doc.go, "Table layout"): every transfer item
// carries gsi2pk = transfer.WalletHash(wallet) and gsi2sk = "<createdAt>#<pk>" from its claim on
// (marshalRecord derives both from the request and createdAt every write carries), so one Query
// in descending order reads a wallet's newest claims first. Channel lease items have neither
// attribute and never appear. The index projects WalletIndexAttributes only: no envelope.
//
// Cost: every write of a transfer item is also one write to gsi2 (about three per transfer:
// claim, attach, settle), of the projected attributes only. One wallet is one index partition,
// which takes at most 1,000 write units a second, and a throttled index throttles the table's
// writes (Amazon DynamoDB Developer Guide, "Partitions and data distribution" and "Understanding
// global secondary index (GSI) write throttling and back pressure"): a single wallet would need
// over 300 transfers a second, far above what the channel accounts carry (README.md, "Capacity").

var _ transfer.HistoryStore = (*Store)(nil)

// ListByWallet queries gsi2 for wallet's items (wallet canonical, upper case: a scope, as
// transfer.Wallet.Scope gives it, so an account's items include its muxed addresses'), newest createdAt
// first (ScanIndexForward false), at most limit items (transfer.DefaultHistoryLimit when
// limit <= 0) after cursor ("" for the start). It returns the records as projected (the fields
// transfer.HistoryStore names) and the next cursor, "" when the query reported no more. The
// lasting records are in the index too: each incarnation is listed once (historyPage), its live
// item while the table holds it, else its record (Archived).
//
// The cursor is base64url of JSON {"gsi2sk","pk"} of the last item the page used (cursor.go);
// the partition is the wallet's own, never read from the cursor. A cursor is refused
// (ErrBadCursor), before any request, unless it is exactly as this package writes it, its pk is
// one of this wallet's store keys whose client key obeys the key rules
// (transfer.ValidStoreKey), and its gsi2sk is a time then "#" and that pk, within DynamoDB's key
// sizes: a cursor issued for another wallet, edited or forged names no position in this
// wallet's partition; a record's position is held to its own shape as strictly (historyStart).
// Like ListInDoubt it reads an eventually consistent index.
func (s *Store) ListByWallet(ctx context.Context, wallet string, limit int, cursor string) ([]transfer.Record, string, error) {
	const what = "list by wallet"
	if limit <= 0 {
		limit = transfer.DefaultHistoryLimit
	}
	limit = min(limit, 1<<31-1)
	partition := transfer.WalletHash(wallet)
	start, err := historyStart(wallet, partition, cursor)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(AttrGSI2PK).Equal(expression.Value(partition))).
		Build()
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: build key condition: %w", what, err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(WalletIndex),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ScanIndexForward:          aws.Bool(false),
		// One more than the page: a record (which sorts right before its live item) at the
		// page's end is listed with its twin in view.
		Limit:             aws.Int32(int32(min(limit+1, 1<<31-1))),
		ExclusiveStartKey: start,
	})
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
	}
	recs, last, err := historyPage(what, out.Items, limit, len(out.LastEvaluatedKey) > 0)
	if err != nil {
		return nil, "", err
	}
	if last == nil && len(out.Items) == 0 && len(out.LastEvaluatedKey) > 0 {
		last = out.LastEvaluatedKey // an empty page that still names more
	}
	if last == nil {
		return recs, "", nil
	}
	next, err := historyCursor(partition, map[string]types.AttributeValue{
		AttrPK: last[AttrPK], AttrGSI2PK: last[AttrGSI2PK], AttrGSI2SK: last[AttrGSI2SK]})
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
	}
	return recs, next, nil
}

// historyPage decodes at most limit entries of a history Query's items (in index order), each
// incarnation once: a lasting record directly followed by its live item (same store key and
// createdAt: the record of that item's settled state, or an older version of it) is listed as
// the live item alone, which says as much and is read first. A record last among the items
// while the partition holds more, and not the page's only entry, is left for the next page, so
// that its twin is in view there. last is the item the next page starts after, nil when the
// partition has no more.
func historyPage(what string, items []map[string]types.AttributeValue, limit int, more bool) (recs []transfer.Record, last map[string]types.AttributeValue, err error) {
	decoded := make([]transfer.Record, len(items))
	for i, av := range items {
		if decoded[i], err = decodeListed(av); err != nil {
			return nil, nil, fmt.Errorf("dynamo: %s: %w", what, err)
		}
	}
	used := 0
	for i := 0; i < len(decoded) && len(recs) < limit; i++ {
		r := decoded[i]
		if r.Archived {
			if i+1 < len(decoded) {
				if twin := decoded[i+1]; !twin.Archived && twin.StoreKey == r.StoreKey && twin.CreatedAt.Equal(r.CreatedAt) {
					recs = append(recs, twin)
					i++
					used = i + 1
					continue
				}
			} else if more && len(recs) > 0 {
				break
			}
		}
		recs = append(recs, r)
		used = i + 1
	}
	if used > 0 && (used < len(items) || more) {
		last = items[used-1]
	}
	return recs, last, nil
}

// decodeListed maps a history item: a record item (ArchivePrefix) as its archive's record
// (Archived), any other as a transfer item.
func decodeListed(av map[string]types.AttributeValue) (transfer.Record, error) {
	if pk, _ := stringAttr(av, AttrPK); strings.HasPrefix(pk, ArchivePrefix) {
		a, err := unmarshalArchive(av)
		// Listed, a record's ExpiresAt is the end of its retention (its own TTL), which DynamoDB
		// deletes days late: the history leaves it out from then on, as GET does.
		a.Record.ExpiresAt = a.RetainUntil
		return a.Record, err
	}
	return unmarshalRecord(av)
}
