package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Channel lease items share the transfers table (doc.go, "Table layout"): pk "channel:<G...>".
const (
	// ChannelPrefix starts a channel lease item's pk.
	ChannelPrefix = "channel:"
	// AttrChannelOwner is the lease owner (S).
	AttrChannelOwner = "leaseOwner"
	// AttrChannelLeaseExpiresAt is when the lease ends without a release, epoch milliseconds (N).
	AttrChannelLeaseExpiresAt = "leaseExpiresAt"
	// AttrChannelQuarantinedUntil is the maxTime of the envelope built on the lease, epoch seconds
	// (N): until a ledger closes after it, that envelope could still land.
	AttrChannelQuarantinedUntil = "quarantinedUntil"
	// AttrChannelLeasedAt is when the lease was taken, epoch milliseconds (N).
	AttrChannelLeasedAt = "leasedAt"
)

// ChannelLeases keeps channel account leases in the table, one conditional write per lease and
// one per release. It implements internal/stellar/sources' LeaseStore. A released channel has no
// item; a leased one holds its owner, lease expiry and quarantine. Safe for concurrent use.
type ChannelLeases struct {
	client Client
	table  string
	// restarted is whether this process's last calendar booking restarted the calendar (it had
	// fallen behind now): which of TakeTicket's two writes to try first.
	restarted atomic.Bool
}

// NewChannelLeases returns the lease store on table through client.
func NewChannelLeases(client Client, table string) *ChannelLeases {
	return &ChannelLeases{client: client, table: table}
}

// ChannelLease is a stored lease.
type ChannelLease struct {
	Channel          string
	Owner            string
	LeasedAt         time.Time
	LeaseExpiresAt   time.Time
	QuarantinedUntil time.Time // whole seconds
}

func channelKey(channel string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: ChannelPrefix + channel}}
}

func num(v int64) *types.AttributeValueMemberN {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// LeaseChannel gives channel to owner until `until`, quarantined until maxTime: PutItem with
// `attribute_not_exists(pk) OR (leaseExpiresAt < :now AND quarantinedUntil < :ledgerClose)`. The
// quarantine is judged by the ledger's close time, never the local clock: an envelope built on
// the previous lease could land until a ledger closes after its maxTime (a release by Done ends
// it sooner by deleting the item). transfer.ErrConditionFailed when the channel is taken. owner must
// be unique per lease (never reused): a failed condition against an item naming owner is this
// lease's own write whose answer was lost, and counts as success.
func (c *ChannelLeases) LeaseChannel(ctx context.Context, channel, owner string, now, until, maxTime, ledgerClose time.Time) error {
	if channel == "" || owner == "" {
		return errors.New("dynamo: a channel lease needs a channel and an owner")
	}
	cond := expression.AttributeNotExists(expression.Name(AttrPK)).Or(expression.And(
		expression.Name(AttrChannelLeaseExpiresAt).LessThan(expression.Value(epochMillis(now))),
		expression.Name(AttrChannelQuarantinedUntil).LessThan(expression.Value(unixOrZero(ledgerClose))),
	))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("dynamo: lease channel %s: build condition: %w", channel, err)
	}
	item := channelKey(channel)
	item[AttrChannelOwner] = &types.AttributeValueMemberS{Value: owner}
	item[AttrChannelLeasedAt] = num(epochMillis(now))
	item[AttrChannelLeaseExpiresAt] = num(epochMillis(until))
	item[AttrChannelQuarantinedUntil] = num(unixOrZero(maxTime))
	_, err = c.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(c.table), Item: item, ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		if conditionFailed(err) {
			// A lease whose write applied but whose answer was lost fails the SDK's retry against
			// itself: owner IDs are unique per lease, so an item naming this owner is this lease.
			if l, gerr := c.Channel(ctx, channel); gerr == nil && l.Owner == owner {
				return nil
			}
			return fmt.Errorf("dynamo: channel %s is leased: %w", channel, transfer.ErrConditionFailed)
		}
		return fmt.Errorf("dynamo: lease channel %s: %w", channel, err)
	}
	return nil
}

// ReleaseChannel deletes owner's lease (DeleteItem with `leaseOwner = :owner`): the envelope's
// fate is decided, so the channel is free at once. transfer.ErrConditionFailed when owner no
// longer holds it (its lease expired and another took it, or it was released already).
func (c *ChannelLeases) ReleaseChannel(ctx context.Context, channel, owner string) error {
	expr, err := expression.NewBuilder().WithCondition(
		expression.Name(AttrChannelOwner).Equal(expression.Value(owner)),
	).Build()
	if err != nil {
		return fmt.Errorf("dynamo: release channel %s: build condition: %w", channel, err)
	}
	_, err = c.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(c.table), Key: channelKey(channel), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err != nil {
		if conditionFailed(err) {
			return fmt.Errorf("dynamo: channel %s is not leased by this owner: %w", channel, transfer.ErrConditionFailed)
		}
		return fmt.Errorf("dynamo: release channel %s: %w", channel, err)
	}
	return nil
}

// Channel reads channel's lease consistently; transfer.ErrNotFound when it is free (released or
// never leased). Operators and the reconcile `channels` action use it.
func (c *ChannelLeases) Channel(ctx context.Context, channel string) (ChannelLease, error) {
	out, err := c.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(c.table), Key: channelKey(channel), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return ChannelLease{}, fmt.Errorf("dynamo: read channel %s: %w", channel, err)
	}
	if len(out.Item) == 0 {
		return ChannelLease{}, transfer.ErrNotFound
	}
	l := ChannelLease{Channel: channel}
	if v, ok := out.Item[AttrChannelOwner].(*types.AttributeValueMemberS); ok {
		l.Owner = v.Value
	}
	numAttr := func(name string) int64 {
		v, ok := out.Item[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	l.LeasedAt = fromEpochMillis(numAttr(AttrChannelLeasedAt))
	l.LeaseExpiresAt = fromEpochMillis(numAttr(AttrChannelLeaseExpiresAt))
	if q := numAttr(AttrChannelQuarantinedUntil); q > 0 {
		l.QuarantinedUntil = time.Unix(q, 0).UTC()
	}
	return l, nil
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

func conditionFailed(err error) bool {
	_, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
	return ok
}
