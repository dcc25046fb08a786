// Command alert is the AlertFunction Lambda: the table's DynamoDB stream (NEW_AND_OLD_IMAGES,
// with ReportBatchItemFailures) -> internal/alert. It only wires. Environment: TABLE_NAME,
// ALERT_TOPIC_ARN (optional SNS topic), EVENT_BUS_NAME (optional EventBridge bus of the
// settlement events), DYNAMODB_ENDPOINT (local only).
package main

import (
	"context"
	"os"

	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	in := wiring.Begin()
	cfg, err := config.LoadAlert(os.Getenv)
	in.Check("invalid configuration", err)
	clients, err := wiring.NewAWSClients(context.Background(), cfg.DynamoEndpoint)
	in.Check("AWS clients", err)
	emf := metrics.New(os.Stdout, nil)
	ac := alert.Config{
		Store: dynamo.New(clients.Dynamo, cfg.Table), Gauge: emf, Logger: in.Logger,
	}
	if cfg.TopicARN != "" {
		ac.Publisher, ac.TopicARN = clients.SNS, cfg.TopicARN
	}
	if cfg.EventBus != "" {
		// AWS_ENDPOINT_URL_EVENTBRIDGE points it elsewhere (the SDK reads it).
		ac.Events, ac.EventBus, ac.EventFailures = eventbridge.NewFromConfig(clients.Config), cfg.EventBus, emf
	}
	in.Start(alert.New(ac).Handle)
}
