package loadtest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// The DynamoDB requests of a Lambda-model run by what they are and by the answer of the call that
// made them: each request is classed by operation, item (a transfer's key, a channel lease, the
// channel calendar), whether it is conditional, and its outcome (ok, its condition failed, or
// another error); each call's classes are added to its answer's (200, 503 CHANNELS_BUSY, other).
// BENCH_BREAKDOWN=1 logs the table per row.

// callTally counts one call's DynamoDB requests by class. Safe for concurrent use (a call's
// release may run beside its answer).
type callTally struct {
	mu     sync.Mutex
	counts map[string]int64
}

type tallyKey struct{}

func (t *callTally) add(class string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.counts == nil {
		t.counts = map[string]int64{}
	}
	t.counts[class]++
}

func (t *callTally) snapshot() map[string]int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.counts)
}

// breakdown sums calls' tallies by their answers ("200", "503", "other") and counts the calls.
type breakdown struct {
	mu    sync.Mutex
	calls map[string]int64
	by    map[string]map[string]int64 // answer -> class -> requests
}

func (b *breakdown) addCall(answer string, t *callTally) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by, b.calls = map[string]map[string]int64{}, map[string]int64{}
	}
	b.calls[answer]++
	m := b.by[answer]
	if m == nil {
		m = map[string]int64{}
		b.by[answer] = m
	}
	for k, v := range t.snapshot() {
		m[k] += v
	}
}

// count is the calls answered answer and the claims they wrote (conditional PutItems of a
// transfer item, won).
func (b *breakdown) count(answer string) (calls, claims int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[answer], b.by[answer]["PutItem transfer cond ok"]
}

// String is the table: a line per answer, its calls and each class's requests per call (one line
// each, so that a benchmark's log, cut at 10 lines, keeps it whole).
func (b *breakdown) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var s strings.Builder
	for _, answer := range slices.Sorted(maps.Keys(b.by)) {
		n := b.calls[answer]
		var total int64
		for _, v := range b.by[answer] {
			total += v
		}
		fmt.Fprintf(&s, "\n  %s: %d calls, %.3f requests per call:", answer, n, float64(total)/float64(max(n, 1)))
		for _, class := range slices.Sorted(maps.Keys(b.by[answer])) {
			v := b.by[answer][class]
			fmt.Fprintf(&s, " [%s] %d (%.3f)", class, v, float64(v)/float64(max(n, 1)))
		}
	}
	return s.String()
}

// tallyDynamo classes every request and adds it to the tally in its context, if any.
type tallyDynamo struct {
	inner interface {
		dynamo.Client
		dynamo.TicketClient
	}
}

func itemKind(av map[string]types.AttributeValue) string {
	s, _ := av[dynamo.AttrPK].(*types.AttributeValueMemberS)
	switch {
	case s == nil:
		return "?"
	case strings.HasPrefix(s.Value, "transfer:"):
		return "transfer"
	case strings.HasPrefix(s.Value, "channel:"):
		return "lease"
	default:
		return "calendar"
	}
}

func tally(ctx context.Context, op, kind string, cond *string, err error) {
	t, _ := ctx.Value(tallyKey{}).(*callTally)
	if t == nil {
		return
	}
	c := "plain"
	if cond != nil {
		c = "cond"
	}
	outcome := "ok"
	var ccf *types.ConditionalCheckFailedException
	switch {
	case errors.As(err, &ccf):
		outcome = "condfail"
	case err != nil:
		outcome = "error"
	}
	t.add(fmt.Sprintf("%s %s %s %s", op, kind, c, outcome))
}

func (s tallyDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := s.inner.PutItem(ctx, in, o...)
	tally(ctx, "PutItem", itemKind(in.Item), in.ConditionExpression, err)
	return out, err
}

func (s tallyDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := s.inner.GetItem(ctx, in, o...)
	tally(ctx, "GetItem", itemKind(in.Key), nil, err)
	return out, err
}

func (s tallyDynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := s.inner.DeleteItem(ctx, in, o...)
	tally(ctx, "DeleteItem", itemKind(in.Key), in.ConditionExpression, err)
	return out, err
}

func (s tallyDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := s.inner.UpdateItem(ctx, in, o...)
	tally(ctx, "UpdateItem", itemKind(in.Key), in.ConditionExpression, err)
	return out, err
}

func (s tallyDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := s.inner.Query(ctx, in, o...)
	tally(ctx, "Query", "index", nil, err)
	return out, err
}
