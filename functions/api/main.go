// Command api is the ApiFunction Lambda: API Gateway HTTP API (payload 2.0) -> internal/api.
// It only wires (wiring.Init.TransferService); configuration is described in README.md.
package main

import (
	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	in := wiring.Begin()
	svc := in.TransferService(true)
	in.Start(api.NewLambdaHandler(svc.Handler))
}
