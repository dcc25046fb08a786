package chaos

import (
	"context"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// UpdateItem books the channel calendar's slots (dynamo.ChannelLeases.TakeTicket; ticket_update)
// or sets a batch item's TTL (dynamo.Store.ExpireBatch; batch_update) through the same faults as
// every other write: refused or throttled before it is sent (nothing booked or set), or applied
// and its answer lost, as an error or as the answer to the same request sent again (the SDK's
// retry: the second booking's answer, one slot skipped, or a failed condition). Having it makes
// faultyDynamo a dynamo.TicketClient, so the wiring schedules the campaign's leases on the
// calendar as the deployed pool does.
func (d *faultyDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	tc, ok := d.API.(dynamo.TicketClient)
	if !ok {
		return nil, dynamo.ErrNoTickets
	}
	kind := "ticket_update"
	if pk, ok := in.Key[dynamo.AttrPK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, transfer.BatchPrefix) {
		kind = "batch_update" // a batch item's TTL (ExpireBatch)
	}
	var out *dynamodb.UpdateItemOutput
	err := d.write(ctx, kind, func() (err error) {
		out, err = tc.UpdateItem(ctx, in, opt...)
		return err
	})
	return out, err
}

var _ dynamo.TicketClient = (*faultyDynamo)(nil)
