package dynamo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The channel calendar is one small item in the transfers table (doc.go, "Table layout"):
// pk "channels:tickets" (not under ChannelPrefix: it is no lease), holding the next ticket number
// and the time booked for it.
const (
	// ChannelTicketsKey is the calendar item's pk.
	ChannelTicketsKey = "channels:tickets"
	// AttrTicketNext is the next ticket number to hand out (N).
	AttrTicketNext = "next"
	// AttrTicketNextAt is the time booked for the next ticket, epoch milliseconds with up to six
	// decimals (N): the calendar's theoretical arrival time.
	AttrTicketNextAt = "nextAt"
)

// TicketClient is the request the channel calendar makes beyond Client's: UpdateItem, whose ADD
// hands out numbers atomically (PutItem cannot read and add in one request). The SDK's client
// has it; a Client that lacks it leaves ChannelLeases without a calendar (TakeTicket answers
// ErrNoTickets) and the pool leases unscheduled.
type TicketClient interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// ErrNoTickets is returned by TakeTicket when the client cannot make UpdateItem requests.
var ErrNoTickets = errors.New("dynamo: the client has no UpdateItem: no channel calendar")

// ticketAttempts bounds TakeTicket's requests: a booking on a calendar ahead of from succeeds at
// once; one behind from takes the restart, and loses it only to a concurrent restart, after which
// the calendar is ahead of from.
const ticketAttempts = 4

// TakeTicket books the next slot of the channel calendar: the ticket number n (0, 1, 2, ...) and
// the time at which it may lease (at), every slot spacing after the previous one and never before
// from (the channel pool passes the start of the ledger its call falls in: a ledger's slots not
// booked by the time it began still serve within it). It is the generic cell rate algorithm
// (ITU-T I.371's virtual scheduling) on one item:
//
//   - while the calendar runs at or ahead of from (callers are waiting): UpdateItem
//     `ADD next :1 SET nextAt = nextAt + :spacing` if `nextAt >= :from`, ReturnValues UPDATED_OLD:
//     the old next and nextAt are this caller's ticket and time. One request.
//   - when it has fallen behind (the pool was idle, or the item is new): UpdateItem
//     `ADD next :1 SET nextAt = :from + :spacing` if `attribute_not_exists(nextAt) OR nextAt < :from`,
//     ReturnValues UPDATED_OLD: the old next is the ticket (0 when the item had none), its time
//     from, restarted is true, and the old nextAt is was, the calendar's time before the restart
//     (zero when the item had none): the caller times the restarted run's first slots from it,
//     since their channels' previous slots were booked just before it (sources.TicketStore).
//     Two requests, the first a failed condition.
//
// A calendar more than horizon ahead of from (horizon > 0) counts as fallen behind: the restart
// takes it, and the queued write's condition is `nextAt BETWEEN :from AND :from + :horizon`. Slots
// that far ahead are no caller's turn any more (an operator's edit, a process whose clock runs
// fast, an overload's slots kept by environments Lambda has since reaped); left alone, they
// would answer every caller CHANNELS_BUSY until real time caught up with them, every channel
// idle. Restarting over slots some process still keeps costs at most their failed lease writes
// (the lease's condition decides), never a transfer.
//
// Times and the spacing are written as milliseconds with up to six decimals, so a round of
// slots spans exactly its spacings (DynamoDB adds decimals exactly).
//
// Neither write is idempotent, and neither needs to be: a ticket only schedules an attempt (the
// lease's own conditional write still decides who holds a channel), so a write the SDK retries
// after its answer was lost books one slot nobody uses, and the channel of that slot stays idle
// for one slot; nothing else changes. The item is about 60 bytes: one write capacity unit per
// booking, far below a partition's 1,000 per second (the API's throttling caps bookings at twice
// the channels per ledger, 52/s at 128 channels).
func (c *ChannelLeases) TakeTicket(ctx context.Context, from time.Time, spacing, horizon time.Duration) (n int64, at time.Time, restarted bool, was time.Time, err error) {
	tc, ok := c.client.(TicketClient)
	if !ok {
		return 0, time.Time{}, false, time.Time{}, ErrNoTickets
	}
	// The item keeps epoch milliseconds with up to six decimals (calendarMillis): a round of
	// count slots spans count x spacing exactly, one ledger when spacing is interval / count (5 s
	// over 64 channels: 78.125 ms). Whole milliseconds, rounded up, would run a round 56 ms past
	// its ledger there, and its last slot would fall in the next one.
	fromNs, step := calendarNanos(from), max(1, spacing.Nanoseconds())
	// A calendar more than horizon ahead of from is stale (see above) and restarted: bounded so
	// that :from + :horizon cannot overflow.
	aheadNs := int64(-1)
	if horizon > 0 {
		aheadNs = min(horizon, 100*365*24*time.Hour).Nanoseconds()
	}
	// The order of the two writes follows this process's last booking: after a restart (light
	// load: the calendar behind from) the restart is tried first, one request instead of two;
	// after a booking queued on the calendar (under load), that write first. Either write's
	// condition makes the other order correct too; the guess only saves a failed condition.
	restartFirst := c.restarted.Load()
	for range ticketAttempts {
		if restartFirst {
			restartFirst = false
			n, was, ok, err := c.restart(ctx, tc, fromNs, step, aheadNs)
			if err != nil {
				return 0, time.Time{}, false, time.Time{}, err
			}
			if ok {
				return n, fromCalendarNanos(fromNs), true, was, nil
			}
		}
		out, err := c.update(ctx, tc,
			expression.Add(expression.Name(AttrTicketNext), expression.Value(1)).
				Set(expression.Name(AttrTicketNextAt), expression.Name(AttrTicketNextAt).Plus(calendarMillis(step))),
			queuedCondition(fromNs, aheadNs), types.ReturnValueUpdatedOld)
		if err == nil {
			next, nextAt, perr := ticketAttrs(out.Attributes)
			if perr != nil {
				return 0, time.Time{}, false, time.Time{}, perr
			}
			c.restarted.Store(false)
			return next, fromCalendarNanos(nextAt), false, time.Time{}, nil
		}
		if !conditionFailed(err) {
			return 0, time.Time{}, false, time.Time{}, fmt.Errorf("dynamo: take a channel ticket: %w", err)
		}
		n, was, ok, err := c.restart(ctx, tc, fromNs, step, aheadNs)
		if err != nil {
			return 0, time.Time{}, false, time.Time{}, err
		}
		if ok {
			return n, fromCalendarNanos(fromNs), true, was, nil
		}
		// Another caller restarted it between the two writes: it is ahead of from again.
	}
	return 0, time.Time{}, false, time.Time{}, fmt.Errorf("dynamo: take a channel ticket: %d attempts lost to concurrent bookings", ticketAttempts)
}

// queuedCondition is the condition of a booking queued on the calendar: nextAt at or after from
// (fromNs, in epoch nanoseconds), and (aheadNs >= 0, nanoseconds) at most aheadNs after it.
func queuedCondition(fromNs, aheadNs int64) expression.ConditionBuilder {
	if aheadNs < 0 {
		return expression.Name(AttrTicketNextAt).GreaterThanEqual(calendarMillis(fromNs))
	}
	return expression.Name(AttrTicketNextAt).GreaterThanEqual(calendarMillis(fromNs)).
		And(expression.Name(AttrTicketNextAt).LessThanEqual(calendarMillis(fromNs + aheadNs)))
}

// restart books ticket next at from (fromNs) on a calendar that has fallen behind it, or
// (aheadNs >= 0) run more than aheadNs ahead of it, and answers the calendar's time before it
// (was; zero when the item had none); ok is false when it has not (the condition failed).
func (c *ChannelLeases) restart(ctx context.Context, tc TicketClient, fromNs, step, aheadNs int64) (n int64, was time.Time, ok bool, err error) {
	stale := expression.AttributeNotExists(expression.Name(AttrTicketNextAt)).Or(expression.Name(AttrTicketNextAt).LessThan(calendarMillis(fromNs)))
	if aheadNs >= 0 {
		stale = stale.Or(expression.Name(AttrTicketNextAt).GreaterThan(calendarMillis(fromNs + aheadNs)))
	}
	out, err := c.update(ctx, tc,
		expression.Add(expression.Name(AttrTicketNext), expression.Value(1)).
			Set(expression.Name(AttrTicketNextAt), calendarMillis(fromNs+step)),
		stale, types.ReturnValueUpdatedOld)
	if err != nil {
		if conditionFailed(err) {
			return 0, time.Time{}, false, nil
		}
		return 0, time.Time{}, false, fmt.Errorf("dynamo: restart the channel calendar: %w", err)
	}
	c.restarted.Store(true)
	// The old values: absent on a new item (ADD starts next from 0, so the ticket is 0).
	if v, ok := out.Attributes[AttrTicketNext].(*types.AttributeValueMemberN); ok {
		if n, err = ticketNumber(v.Value); err != nil {
			return 0, time.Time{}, false, err
		}
	}
	if v, ok := out.Attributes[AttrTicketNextAt].(*types.AttributeValueMemberN); ok {
		was = fromCalendarNanos(clampCalendarMillis(v.Value))
	}
	return n, was, true, nil
}

// clampCalendarMillis is parseCalendarMillis for a calendar being restarted over: a time past
// int64 nanoseconds either way is taken as the nearest one it has (a restart must not fail on the
// digits it replaces: TestACalendarTimeOfAnyDigitsIsReadOrRestartedOnDynalite), and one that is
// no number as the latest, so that the slots before it count as recent, never as long gone.
func clampCalendarMillis(s string) int64 {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return math.MaxInt64
	}
	ns := new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1e6)), r.Denom())
	switch {
	case ns.IsInt64():
		return ns.Int64()
	case ns.Sign() < 0:
		return math.MinInt64
	default:
		return math.MaxInt64
	}
}

func (c *ChannelLeases) update(ctx context.Context, tc TicketClient, upd expression.UpdateBuilder, cond expression.ConditionBuilder, rv types.ReturnValue) (*dynamodb.UpdateItemOutput, error) {
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return nil, fmt.Errorf("dynamo: channel ticket: build expression: %w", err)
	}
	return tc.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(c.table), Key: map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: ChannelTicketsKey}},
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ReturnValues: rv,
	})
}

// ticketAttrs reads next and nextAt from the UPDATED_OLD answer of a queued booking (which always
// carries both: its condition needs nextAt); nextAt is 0 when absent.
func ticketAttrs(m map[string]types.AttributeValue) (next, nextAt int64, err error) {
	get := func(name string, required bool) (string, error) {
		v, ok := m[name].(*types.AttributeValueMemberN)
		if !ok {
			if required {
				return "", fmt.Errorf("dynamo: channel ticket answer lacks %s", name)
			}
			return "0", nil
		}
		return v.Value, nil
	}
	s, err := get(AttrTicketNext, true)
	if err != nil {
		return 0, 0, err
	}
	if next, err = ticketNumber(s); err != nil {
		return 0, 0, err
	}
	if s, err = get(AttrTicketNextAt, false); err != nil {
		return 0, 0, err
	}
	if nextAt, err = parseCalendarMillis(s); err != nil {
		return 0, 0, err
	}
	return next, nextAt, nil
}

// calendarMillis is the calendar value of ns nanoseconds (an epoch time or a spacing): a number
// of milliseconds with up to six decimals (DynamoDB's numbers are decimal, and add exactly).
func calendarMillis(ns int64) expression.ValueBuilder {
	v := strings.TrimSuffix(strings.TrimRight(big.NewRat(ns, 1e6).FloatString(6), "0"), ".")
	return expression.Value(&types.AttributeValueMemberN{Value: v})
}

// calendarNanos is t in epoch nanoseconds, 0 for the zero time.
func calendarNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromCalendarNanos is the UTC time of ns epoch nanoseconds.
func fromCalendarNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// parseCalendarMillis reads a calendar time (epoch milliseconds, whole as earlier items keep
// them, or with decimals) as epoch nanoseconds, digits past the nanosecond dropped.
func parseCalendarMillis(s string) (int64, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("dynamo: channel calendar time %q is no number", s)
	}
	ns := new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1e6)), r.Denom())
	if !ns.IsInt64() {
		return 0, fmt.Errorf("dynamo: channel calendar time %q is out of range", s)
	}
	return ns.Int64(), nil
}

// ticketWrap is where ticket numbers past int64 wrap around (2^62).
var ticketWrap = new(big.Int).Lsh(big.NewInt(1), 62)

// ticketNumber reads a ticket number. DynamoDB keeps 38 digits, so a number past int64 (an
// operator's edit; bookings alone would take billions of years) is taken modulo 2^62 rather than
// failing every booking from then on: a ticket only picks a channel (n mod channels), and the
// wrap costs at most one slot on a channel that another slot also names. A fraction (an edit too)
// is taken down to the whole number below it, so that the numbers the bookings' ADDs make of it
// stay consecutive across zero (-0.5 is -1, the next booking's 0.5 is 0).
func ticketNumber(s string) (int64, error) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return 0, fmt.Errorf("dynamo: channel ticket number %q is no number", s)
	}
	n := new(big.Int).Div(r.Num(), r.Denom()) // Euclidean: the floor, the denominator being positive
	if n.IsInt64() {
		return n.Int64(), nil
	}
	return n.Mod(n, ticketWrap).Int64(), nil
}
