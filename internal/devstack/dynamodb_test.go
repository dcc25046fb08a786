package devstack

import (
	"context"
	"errors"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/server"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// `aws dynamodb list-tables` against the embedded DynamoDB: the SDK's own client and paginator
// see the tables created and not those deleted, in order, a page at a time.
func TestListTablesOnTheEmbeddedDynamoDB(t *testing.T) {
	srv := httptest.NewServer(newTableLister(server.NewServer()))
	defer srv.Close()
	db := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
	ctx := context.Background()
	list := func(limit int32) []string {
		t.Helper()
		var names []string
		p := dynamodb.NewListTablesPaginator(db, &dynamodb.ListTablesInput{Limit: aws.Int32(limit)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(page.TableNames) > int(limit) {
				t.Fatalf("a page of %d names for Limit %d", len(page.TableNames), limit)
			}
			names = append(names, page.TableNames...)
		}
		return names
	}
	if got := list(100); len(got) != 0 {
		t.Fatalf("tables before any was created = %v", got)
	}
	for _, name := range []string{"transfers", "audit", "zeta"} {
		if err := dynamo.EnsureTable(ctx, db, name); err != nil {
			t.Fatal(err)
		}
	}
	// Creating a table that exists fails and lists it once.
	if _, err := db.CreateTable(ctx, dynamo.TableDefinition("transfers")); err == nil {
		t.Fatal("creating an existing table succeeded")
	}
	if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("zeta")}); err != nil {
		t.Fatal(err)
	}
	// Deleting a table that does not exist fails and changes nothing.
	if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("missing")}); err == nil {
		t.Fatal("deleting a missing table succeeded")
	}
	want := []string{"audit", "transfers"}
	for _, limit := range []int32{1, 2, 100} {
		if got := list(limit); !slices.Equal(got, want) {
			t.Errorf("Limit %d: tables = %v, want %v", limit, got, want)
		}
	}
	var apiErr smithy.APIError
	if _, err := db.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(101)}); !errors.As(err, &apiErr) || apiErr.ErrorCode() != "ValidationException" {
		t.Errorf("Limit 101: err = %v, want a ValidationException", err)
	}
	// Everything else still reaches minidyn.
	if _, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("transfers")}); err != nil {
		t.Errorf("DescribeTable: %v", err)
	}
}
