// Command alert is the AlertFunction Lambda: the table's DynamoDB stream -> internal/alert. It
// only wires (wiring.Init.AlertHandler). Environment: TABLE_NAME, ALERT_TOPIC_ARN, EVENT_BUS_NAME,
// DYNAMODB_ENDPOINT (local only).
package main

import "github.com/stellar-transfer/orchestrator/internal/wiring"

func main() {
	in := wiring.Begin()
	in.Start(in.AlertHandler().Handle)
}
