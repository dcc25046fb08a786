// Command alert is the AlertFunction Lambda: the table's DynamoDB stream (NEW_AND_OLD_IMAGES,
// with ReportBatchItemFailures) -> internal/alert. It only wires. Environment: TABLE_NAME,
// ALERT_TOPIC_ARN (optional SNS topic), DYNAMODB_ENDPOINT (local only).
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	logger := logging.New(os.Stdout, slog.LevelInfo)
	fail := func(msg string, err error) {
		logger.Error(msg, "err", err)
		os.Exit(1)
	}
	if err := tracing.Configure(); err != nil {
		fail("X-Ray configuration", err)
	}
	cfg, err := config.LoadAlert(os.Getenv)
	if err != nil {
		fail("invalid configuration", err)
	}
	clients, err := wiring.NewAWSClients(context.Background(), cfg.DynamoEndpoint)
	if err != nil {
		fail("AWS clients", err)
	}
	ac := alert.Config{
		Store: dynamo.New(clients.Dynamo, cfg.Table), Gauge: metrics.New(os.Stdout, nil), Logger: logger,
	}
	if cfg.TopicARN != "" {
		ac.Publisher, ac.TopicARN = clients.SNS, cfg.TopicARN
	}
	lambda.Start(alert.New(ac).Handle)
}
