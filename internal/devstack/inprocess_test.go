package devstack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
	"github.com/truora/minidyn/server"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// exchange is one request and its answer as the SDK's transport saw them.
type exchange struct {
	target string
	status int
	body   string
}

// taping records what goes through a transport.
type taping struct {
	base http.RoundTripper
	mu   sync.Mutex
	tape []exchange
}

func (t *taping) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	t.mu.Lock()
	t.tape = append(t.tape, exchange{req.Header.Get("X-Amz-Target"), res.StatusCode, string(body)})
	t.mu.Unlock()
	return res, nil
}

// TestHandlerTransportAnswersAsTheSocket plays one script of DynamoDB requests (the fault
// campaign's kinds: conditional puts that apply and that fail, reads of a present and a missing
// item, a query of the in-doubt index, conditional deletes, and requests during an emulated
// outage) against two fresh minidyn servers: one over a loopback socket with signed requests, as
// the stack serves by default, and one through handlerTransport unsigned (InProcessDynamo). Every answer
// must be the same, byte for byte, and so must what the SDK made of it.
func TestHandlerTransportAnswersAsTheSocket(t *testing.T) {
	ctx := context.Background()
	sockSrv, memSrv := server.NewServer(), server.NewServer()
	hs := httptest.NewServer(sockSrv)
	defer hs.Close()
	sockTape := &taping{base: hs.Client().Transport}
	memTape := &taping{base: handlerTransport{memSrv}}
	sock := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(hs.URL),
		HTTPClient: &http.Client{Transport: sockTape}, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	mem := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(inProcessDynamoURL),
		HTTPClient: &http.Client{Transport: memTape}, RetryMaxAttempts: 1, Credentials: aws.AnonymousCredentials{}})
	const table = "chaos_transport"
	for _, c := range []*dynamodb.Client{sock, mem} {
		if err := dynamo.EnsureTable(ctx, c, table); err != nil {
			t.Fatal(err)
		}
	}
	// Table creation answers carry creation times; the script's answers are compared from here.
	sockTape.tape, memTape.tape = nil, nil

	item := func(pk, status string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk},
			"status": &types.AttributeValueMemberS{Value: status}, "gsi1pk": &types.AttributeValueMemberS{Value: "in_doubt"},
			"gsi1sk": &types.AttributeValueMemberS{Value: "2033-05-18T03:33:20.000000000Z#" + pk}}
	}
	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
	}
	absent := aws.String("attribute_not_exists(pk)")
	script := []func(c *dynamodb.Client, srv *server.Server) (any, error){
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "in_flight"), ConditionExpression: absent})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "in_flight"), ConditionExpression: absent})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a"), ConsistentRead: aws.Bool(true)})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("missing"), ConsistentRead: aws.Bool(true)})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("a", "in_doubt"),
				ConditionExpression:       aws.String("#s = :s"),
				ExpressionAttributeNames:  map[string]string{"#s": "status"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "in_flight"}}})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(table), IndexName: aws.String("gsi1"),
				KeyConditionExpression:    aws.String("gsi1pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "in_doubt"}}})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("a"),
				ConditionExpression:       aws.String("#s = :s"),
				ExpressionAttributeNames:  map[string]string{"#s": "status"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "in_flight"}}})
		},
		func(c *dynamodb.Client, srv *server.Server) (any, error) {
			srv.EmulateFailureForTable(table, server.FailureConditionInternalServerError)
			defer srv.EmulateFailureForTable(table, server.FailureConditionNone)
			return c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a"), ConsistentRead: aws.Bool(true)})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key("a")})
		},
		func(c *dynamodb.Client, _ *server.Server) (any, error) {
			return c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key("a"), ConsistentRead: aws.Bool(true)})
		},
	}
	sdkView := func(out any, err error) string {
		var api smithy.APIError
		if errors.As(err, &api) {
			return "error " + api.ErrorCode() + ": " + api.ErrorMessage()
		}
		if err != nil {
			return "error " + err.Error()
		}
		switch o := out.(type) {
		case *dynamodb.GetItemOutput:
			var m map[string]any
			if err := attributevalue.UnmarshalMap(o.Item, &m); err != nil {
				return "undecodable " + err.Error()
			}
			return fmt.Sprintf("item %v", m)
		case *dynamodb.QueryOutput:
			var ms []map[string]any
			if err := attributevalue.UnmarshalListOfMaps(o.Items, &ms); err != nil {
				return "undecodable " + err.Error()
			}
			return fmt.Sprintf("items %v count %d", ms, o.Count)
		}
		return "ok"
	}
	for i, step := range script {
		want, got := sdkView(step(sock, sockSrv)), sdkView(step(mem, memSrv))
		if want != got {
			t.Errorf("step %d: over the socket the SDK saw %q, in-process %q", i, want, got)
		}
	}
	if len(sockTape.tape) != len(script) || len(memTape.tape) != len(script) {
		t.Fatalf("%d and %d exchanges for %d steps", len(sockTape.tape), len(memTape.tape), len(script))
	}
	kinds := map[int]bool{}
	for i := range sockTape.tape {
		if sockTape.tape[i] != memTape.tape[i] {
			t.Errorf("exchange %d: over the socket %+v, in-process %+v", i, sockTape.tape[i], memTape.tape[i])
		}
		kinds[sockTape.tape[i].status] = true
	}
	// The script met success, a failed condition and the outage (400 and 500).
	if !kinds[200] || !kinds[400] || !kinds[500] {
		t.Errorf("statuses met: %v", kinds)
	}
}

// TestHandlerTransportEndedContext: a request whose context ended before or while it was served
// gets the context's error, as over a socket.
func TestHandlerTransportEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tr := handlerTransport{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("served after the context ended") })}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, inProcessDynamoURL, bytes.NewReader([]byte("{}")))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	served := false
	tr = handlerTransport{http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = true; cancel2() })}
	req, _ = http.NewRequestWithContext(ctx2, http.MethodPost, inProcessDynamoURL, bytes.NewReader([]byte("{}")))
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) || !served {
		t.Fatalf("err = %v, served %v", err, served)
	}
}
