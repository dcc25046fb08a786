package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

func TestProbe(t *testing.T) {
	mc, _ := dynamotest.Minidyn(t)
	for name, c := range map[string]*dynamodb.Client{"minidyn": mc, "dynalite": dynamotest.NewClient(os.Getenv("DYNALITE_ENDPOINT"))} {
		ctx := context.Background()
		tb := "probe_" + name
		out, err := c.CreateTable(ctx, dynamo.TableDefinition(tb))
		if err != nil {
			t.Logf("%s create: %v", name, err)
			continue
		}
		t.Logf("%s create status=%q stream=%v", name, out.TableDescription.TableStatus, out.TableDescription.StreamSpecification)
		start := time.Now()
		for {
			d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tb)})
			if err != nil {
				t.Logf("describe err %v", err)
				break
			}
			gs := ""
			for _, g := range d.Table.GlobalSecondaryIndexes {
				gs += string(g.IndexStatus)
			}
			t.Logf("%s %v status=%q gsi=%q", name, time.Since(start).Round(time.Millisecond), d.Table.TableStatus, gs)
			if d.Table.TableStatus != types.TableStatusCreating {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(tb), TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expiresAt"), Enabled: aws.Bool(true)}})
		var ae smithy.APIError
		errors.As(err, &ae)
		t.Logf("%s ttl err=%v apiErr=%#v", name, err, ae)
		if ae != nil {
			t.Logf("code=%q fault=%v", ae.ErrorCode(), ae.ErrorFault())
		}
		var re interface{ HTTPStatusCode() int }
		if errors.As(err, &re) {
			t.Logf("http %d", re.HTTPStatusCode())
		}
		it := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}, "x": &types.AttributeValueMemberN{Value: "1"}}
		c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb), Item: it})
		_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(tb), Item: it, ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		ccf, ok := errors.AsType[*types.ConditionalCheckFailedException](err)
		t.Logf("%s put ccf=%v item=%v", name, ok, func() any {
			if ok {
				return fmt.Sprint(ccf.Item)
			}
			return err
		}())
		_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(tb), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}, ConditionExpression: aws.String("x = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: "2"}}, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
		ccf, ok = errors.AsType[*types.ConditionalCheckFailedException](err)
		t.Logf("%s delete ccf=%v item=%v err=%v", name, ok, ccf != nil && len(ccf.Item) > 0, err)
		_, err = c.CreateTable(ctx, dynamo.TableDefinition("ab"))
		t.Logf("%s short name: %v", name, err)
	}
}
