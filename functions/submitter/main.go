// Command submitter is the SubmitterFunction Lambda: SQS events of async transfers ->
// internal/queue.Submitter -> transfer.Orchestrator.RunQueued (README.md, "Asynchronous
// transfers"). It only wires. Environment: as the API function (TABLE_NAME, STELLAR_RPC_URL,
// NETWORK_PASSPHRASE, VAULT_ACCOUNT, ASSETS, SIGNING_SECRET_ARN or SIGNER=kms, ...) and QUEUE_URL,
// the queue its messages come from: it sends no message, but it shortens the visibility timeout
// of a message to deliver again (ChangeMessageVisibility; queue.Backoff). Without QUEUE_URL a
// failed message waits the queue's visibility timeout. BATCH_SIZE above 1 hands each event's messages
// to transfer.Orchestrator.RunQueuedBatch (internal/queue.BatchSubmitter; wiring.SubmitterHandler picks).
package main

import (
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func main() {
	in := wiring.Begin()
	// As the API function's start-up (wiring.Init.TransferService), without the queue's sender.
	svc := in.TransferService(false)
	in.Start(wiring.SubmitterHandler(svc, in.Logger))
}
