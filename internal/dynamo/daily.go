package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A daily reconciliation's report (internal/reconcile, daily.go) is an item of its own in the
// transfer table: pk DailyKey(day), "daily:YYYY-MM-DD", with report (S, the report's JSON, at most
// MaxDailyReport bytes), generatedAt (S, RFC 3339 UTC) and discrepancies (N). No status, no index
// key and no TTL: no claim, index or stream consumer reads it (the alert function acts on
// "transfer:" items only), and it is kept for ever. A later run of the same day replaces it.

// DailyPrefix starts every daily report's pk.
const DailyPrefix = "daily:"

// MaxDailyReport bounds a stored report's JSON, under DynamoDB's item size limit of 400 KB.
const MaxDailyReport = 350_000

// DailyKey is the pk of day's report (day: any instant of the UTC day).
func DailyKey(day time.Time) string { return DailyPrefix + day.UTC().Format(time.DateOnly) }

// PutDailyReport writes the report of day (its JSON), replacing an earlier one. A report over
// MaxDailyReport bytes is an error before writing.
func (s *Store) PutDailyReport(ctx context.Context, day time.Time, report []byte, generatedAt time.Time, discrepancies int) error {
	if len(report) > MaxDailyReport {
		return fmt.Errorf("dynamo: put daily report: %d bytes, over %d", len(report), MaxDailyReport)
	}
	_, err := s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			AttrPK:          &types.AttributeValueMemberS{Value: DailyKey(day)},
			"report":        &types.AttributeValueMemberS{Value: string(report)},
			"generatedAt":   &types.AttributeValueMemberS{Value: generatedAt.UTC().Format(time.RFC3339Nano)},
			"discrepancies": &types.AttributeValueMemberN{Value: strconv.Itoa(discrepancies)},
		},
	})
	if err != nil {
		return fmt.Errorf("dynamo: put daily report %s: %w", DailyKey(day), err)
	}
	return nil
}

// GetDailyReport reads the stored report of day (its JSON), strongly consistent;
// transfer.ErrNotFound (wrapped) when none was stored.
func (s *Store) GetDailyReport(ctx context.Context, day time.Time) ([]byte, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: DailyKey(day)}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return nil, fmt.Errorf("dynamo: get daily report %s: %w", DailyKey(day), err)
	}
	if out.Item == nil {
		return nil, fmt.Errorf("dynamo: daily report %s: %w", DailyKey(day), transfer.ErrNotFound)
	}
	r, ok := out.Item["report"].(*types.AttributeValueMemberS)
	if !ok {
		return nil, errors.New("dynamo: daily report " + DailyKey(day) + ": no report attribute")
	}
	return []byte(r.Value), nil
}
