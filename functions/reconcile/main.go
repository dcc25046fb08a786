// Command reconcile is the ReconcileFunction Lambda: operator actions and the scheduled sweep ->
// internal/reconcile. It only wires (wiring.Init.ReconcileService). Payloads:
// {"action":"list"|"get"|"resolve"|"sweep"|"channels", ...}; see README.md. The same binary is
// InDoubtReaderFunction with RECONCILE_ACTIONS=read: list and get only, and no signing key read
// (README.md, "Operator roles").
package main

import "github.com/stellar-transfer/orchestrator/internal/wiring"

func main() {
	in := wiring.Begin()
	// A lambda.Handler itself: it reads every byte of the payload (reconcile.Service.Invoke).
	in.Start(in.ReconcileService())
}
