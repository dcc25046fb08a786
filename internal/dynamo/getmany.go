package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// BatchGetClient is the part of the DynamoDB API GetMany reads with; *dynamodb.Client has it.
// Without it GetMany reads item by item (Get).
type BatchGetClient interface {
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Reading many items (Amazon DynamoDB API Reference, BatchGetItem): at most 100 keys a request,
// none twice ("Provided list of item keys contains duplicates" is a ValidationException); a
// request may answer only part of them and name the rest in UnprocessedKeys (its response over
// 16 MB, or the table's throughput exceeded), which the reference asks to be read again after an
// exponential backoff. The SDK's retryer handles a request refused whole (throttled, 5xx); these
// bound the requests for the keys left unprocessed.
const (
	// BatchGetKeys is the most keys one BatchGetItem reads.
	BatchGetKeys = 100
	// batchGetAttempts bounds the requests for one group of up to BatchGetKeys keys: the first
	// and the reads of what each left unprocessed.
	batchGetAttempts = 5
	// batchGetBackoff is the pause before the first read of unprocessed keys, doubled before each
	// next one (25, 50, 100, 200 ms: 375 ms in all at most).
	batchGetBackoff = 25 * time.Millisecond
)

var _ transfer.ManyReader = (*Store)(nil)

// WithClock returns a copy of s that pauses on c (GetMany's backoff) instead of the system clock.
func (s *Store) WithClock(c transfer.Clock) *Store {
	cp := *s
	cp.clock = c
	return &cp
}

// GetMany reads the transfer items at storeKeys (transfer.ManyReader) with BatchGetItem,
// ConsistentRead true, BatchGetKeys keys a request (a key given twice is asked once), and reads the
// keys a request left unprocessed again after batchGetBackoff, doubled each time, on the Store's
// clock (WithClock), at most batchGetAttempts requests per group. It returns each item found by
// its store key; a key with no item is absent. Errors: a request's, an item that does not decode,
// or keys still unprocessed after the last attempt; the map then holds what was read (and decoded)
// before. A client without BatchGetItem reads each key with Get.
func (s *Store) GetMany(ctx context.Context, storeKeys []string) (map[string]transfer.Record, error) {
	out := make(map[string]transfer.Record, len(storeKeys))
	keys := make([]string, 0, len(storeKeys))
	seen := make(map[string]bool, len(storeKeys))
	for _, k := range storeKeys {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	bg, ok := s.client.(BatchGetClient)
	if !ok {
		for _, k := range keys {
			rec, err := s.Get(ctx, k)
			switch {
			case err == nil:
				out[k] = rec
			case !errors.Is(err, transfer.ErrNotFound):
				return out, err
			}
		}
		return out, nil
	}
	for start := 0; start < len(keys); start += BatchGetKeys {
		if err := s.getGroup(ctx, bg, keys[start:min(start+BatchGetKeys, len(keys))], out); err != nil {
			return out, err
		}
	}
	return out, nil
}

// getGroup reads keys (at most BatchGetKeys, none twice) into out, as GetMany says.
func (s *Store) getGroup(ctx context.Context, bg BatchGetClient, keys []string, out map[string]transfer.Record) error {
	pending := make([]map[string]types.AttributeValue, len(keys))
	for i, k := range keys {
		pending[i] = keyOf(k)
	}
	pause := batchGetBackoff
	for attempt := 1; ; attempt++ {
		res, err := bg.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
			RequestItems: map[string]types.KeysAndAttributes{
				s.table: {Keys: pending, ConsistentRead: aws.Bool(true)},
			},
		})
		if err != nil {
			return fmt.Errorf("dynamo: get %d items: %w", len(pending), err)
		}
		for _, av := range res.Responses[s.table] {
			rec, err := unmarshalRecord(av)
			if err != nil {
				return fmt.Errorf("dynamo: get many: %w", err)
			}
			out[rec.StoreKey] = rec
		}
		pending = res.UnprocessedKeys[s.table].Keys
		if len(pending) == 0 {
			return nil
		}
		if attempt == batchGetAttempts {
			return fmt.Errorf("dynamo: get many: %d of %d keys still unprocessed after %d requests", len(pending), len(keys), attempt)
		}
		if err := s.sleep(ctx, pause); err != nil {
			return fmt.Errorf("dynamo: get many: %d keys unprocessed: %w", len(pending), err)
		}
		pause *= 2
	}
}

// sleep pauses d on the Store's clock (the system clock unless WithClock).
func (s *Store) sleep(ctx context.Context, d time.Duration) error {
	if s.clock != nil {
		return s.clock.Sleep(ctx, d)
	}
	return transfer.SystemClock{}.Sleep(ctx, d)
}
