package dynamo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// Attribute and index names of the table's keys (doc.go, "Table layout").
const (
	// AttrPK is the partition key (S): "transfer:<16 hex>:<clientKey>" or "channel:<G...>".
	AttrPK = "pk"
	// AttrClaimID is a transfer item's incarnation (S), written by its claim and kept by every
	// later write; part of every conditional write's condition (transfer.Condition).
	AttrClaimID = "claimId"
	// AttrGSI1PK is the sparse index's partition key (S): InDoubtPartition while an item's status
	// is in_doubt, ClaimsPartition while it is in_flight, QueuedPartition while it is queued,
	// absent otherwise.
	AttrGSI1PK = "gsi1pk"
	// AttrGSI1SK is the sparse index's sort key (S): "<time, RFC 3339 UTC with milliseconds>#<pk>",
	// the time being when the item became in_doubt, an in_flight claim's lease expiry, or when a
	// queued item was queued; so the index lists the oldest first.
	AttrGSI1SK = "gsi1sk"
	// AttrGSI2PK is the history index's partition key (S): transfer.WalletHash of the item's
	// wallet (64 hex), on every transfer item written since the index exists; never the address.
	AttrGSI2PK = "gsi2pk"
	// AttrGSI2SK is the history index's sort key (S): "<createdAt, RFC 3339 UTC with
	// milliseconds>#<pk>"; a Query in descending order lists the newest claim first.
	AttrGSI2SK = "gsi2sk"
	// TTLAttribute is the table's TTL attribute: epoch seconds (N), absent when the item never
	// expires. DynamoDB deletes expired items days late, so expiry is also checked in code.
	TTLAttribute = "expiresAt"
	// InDoubtIndex is the name of the sparse global secondary index over in_doubt items.
	InDoubtIndex = "gsi1"
	// InDoubtPartition is the gsi1pk value of every in_doubt item.
	InDoubtPartition = "in_doubt"
	// ClaimsPartition is the gsi1pk value of every in_flight item: the sweep finds expired claims
	// (invocations that died holding a lease) with one Query instead of a Scan of the table.
	ClaimsPartition = "in_flight"
	// WalletIndex is the name of the sparse global secondary index over transfer items by wallet
	// (a wallet's history, ListByWallet).
	WalletIndex = "gsi2"
	// AttrGSI3PK is the records index's partition key (S): the store key a lasting record keeps
	// (archive.go); only record items carry it.
	AttrGSI3PK = "gsi3pk"
	// AttrGSI3SK is the records index's sort key (S): the incarnation's createdAt, RFC 3339 UTC
	// with milliseconds; descending order gives the newest first.
	AttrGSI3SK = "gsi3sk"
	// RecordIndex is the name of the sparse global secondary index over the lasting records by
	// store key (LatestArchive).
	RecordIndex = "gsi3"
	// QueuedPartition is the gsi1pk value of every queued item (an async transfer waiting for the
	// submitter), sorted by the time it was queued: the sweep finds queued items whose message
	// was never sent or was lost by their age (ListQueued).
	QueuedPartition = "queued"
)

// WalletIndexAttributes are the attributes gsi2 projects besides the keys (pk, gsi2pk, gsi2sk):
// what a wallet's history shows (transfer.HistoryStore), never the envelope.
var WalletIndexAttributes = []string{"status", "clientKey", "request", "result", "createdAt", "updatedAt", TTLAttribute}

// TableClient is the part of the DynamoDB API that EnsureTable uses. *dynamodb.Client satisfies it.
type TableClient interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

// TableDefinition is the table's one definition in Go: pk (S) hash key, on-demand billing, the
// sparse index gsi1 (gsi1pk S hash, gsi1sk S range, projection ALL), the sparse index gsi2
// (gsi2pk S hash, gsi2sk S range, projection INCLUDE WalletIndexAttributes) and a stream of
// NEW_AND_OLD_IMAGES (the alert function's input), and the sparse index gsi3 (gsi3pk S hash, gsi3sk
// S range, projection ALL) of the lasting records (archive.go). TTL is set separately (UpdateTimeToLive on
// TTLAttribute). Real DynamoDB wants name to be 3 to 255 characters of [a-zA-Z0-9_.-].
func TableDefinition(name string) *dynamodb.CreateTableInput {
	return &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String(AttrPK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrGSI1PK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrGSI1SK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrGSI2PK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrGSI2SK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrGSI3PK), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String(AttrGSI3SK), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String(AttrPK), KeyType: types.KeyTypeHash},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName: aws.String(InDoubtIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrGSI1PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrGSI1SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}, {
			IndexName: aws.String(WalletIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrGSI2PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrGSI2SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{
				ProjectionType:   types.ProjectionTypeInclude,
				NonKeyAttributes: slices.Clone(WalletIndexAttributes),
			},
		}, {
			IndexName: aws.String(RecordIndex),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String(AttrGSI3PK), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String(AttrGSI3SK), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		StreamSpecification: &types.StreamSpecification{
			StreamEnabled:  aws.Bool(true),
			StreamViewType: types.StreamViewTypeNewAndOldImages,
		},
	}
}

// EnsureTablePollInterval is how often EnsureTable polls DescribeTable while the table is not
// ACTIVE.
const EnsureTablePollInterval = 100 * time.Millisecond

// ensureTableDefaultWait bounds EnsureTable when ctx has no deadline.
const ensureTableDefaultWait = 5 * time.Minute

// EnsureTable creates the table named name from TableDefinition if it does not exist, then waits
// until it and its indexes are ACTIVE by polling DescribeTable (the SDK's TableExists waiter never
// succeeds on minidyn, whose TableStatus is empty: empty counts as ACTIVE). When it creates the
// table it also enables TTL on TTLAttribute, tolerating emulators that do not implement
// UpdateTimeToLive (dynalite, minidyn). An existing table's TTL and shape are left alone. Without a
// deadline on ctx it gives up after 5 minutes.
func EnsureTable(ctx context.Context, client TableClient, name string) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ensureTableDefaultWait)
		defer cancel()
	}
	created := false
	_, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		if _, missing := errors.AsType[*types.ResourceNotFoundException](err); !missing {
			return fmt.Errorf("dynamo: describe table %q: %w", name, err)
		}
		_, err = client.CreateTable(ctx, TableDefinition(name))
		if _, exists := errors.AsType[*types.ResourceInUseException](err); err != nil && !exists {
			return fmt.Errorf("dynamo: create table %q: %w", name, err)
		}
		created = err == nil
	}
	if err := waitActive(ctx, client, name); err != nil {
		return err
	}
	if created {
		_, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
			TableName: aws.String(name),
			TimeToLiveSpecification: &types.TimeToLiveSpecification{
				AttributeName: aws.String(TTLAttribute),
				Enabled:       aws.Bool(true),
			},
		})
		if err != nil && !ttlUnsupported(err) {
			return fmt.Errorf("dynamo: enable TTL on %q: %w", name, err)
		}
	}
	return nil
}

// waitActive polls DescribeTable until the table and its global secondary indexes are ACTIVE (or
// report no status, as minidyn does).
func waitActive(ctx context.Context, client TableClient, name string) error {
	for {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)})
		_, missing := errors.AsType[*types.ResourceNotFoundException](err)
		switch {
		case missing:
			// Not visible yet (eventually consistent control plane): keep polling.
		case err != nil:
			return fmt.Errorf("dynamo: describe table %q: %w", name, err)
		case out.Table == nil:
			return fmt.Errorf("dynamo: describe table %q: no table description", name)
		default:
			ready, err := tableReady(name, out.Table)
			if ready || err != nil {
				return err
			}
		}
		t := time.NewTimer(EnsureTablePollInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("dynamo: waiting for table %q to become ACTIVE: %w", name, ctx.Err())
		case <-t.C:
		}
	}
}

func tableReady(name string, td *types.TableDescription) (bool, error) {
	switch td.TableStatus {
	case types.TableStatusActive, "":
	case types.TableStatusCreating, types.TableStatusUpdating:
		return false, nil
	default:
		return false, fmt.Errorf("dynamo: table %q is %s", name, td.TableStatus)
	}
	for _, gsi := range td.GlobalSecondaryIndexes {
		switch gsi.IndexStatus {
		case types.IndexStatusActive, "":
		case types.IndexStatusCreating, types.IndexStatusUpdating:
			return false, nil
		default:
			return false, fmt.Errorf("dynamo: index %q of table %q is %s", aws.ToString(gsi.IndexName), name, gsi.IndexStatus)
		}
	}
	return true, nil
}

// ttlUnsupported reports whether err is an emulator's "not implemented" answer to
// UpdateTimeToLive: dynalite answers UnknownOperationException; minidyn a plain-text HTTP 400
// ("unsupported operation") that the SDK fails to deserialize.
func ttlUnsupported(err error) bool {
	if apiErr, ok := errors.AsType[smithy.APIError](err); ok {
		return apiErr.ErrorCode() == "UnknownOperationException"
	}
	_, undecodable := errors.AsType[*smithy.DeserializationError](err)
	var respErr interface{ HTTPStatusCode() int }
	return undecodable && errors.As(err, &respErr) && respErr.HTTPStatusCode() == 400
}
