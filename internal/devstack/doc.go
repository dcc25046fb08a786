// Package devstack is the whole service assembled on one machine: the API function behind an
// HTTP server, the alert, reconcile, reader and submitter functions behind a local Lambda Invoke
// API, an embedded DynamoDB-compatible server (minidyn) with the table's stream, a local Stellar
// network (internal/stellarsim) with a funded vault, an asset and demo wallets, and, on demand, a
// KMS emulator and an OTLP receiver. Every function is assembled by internal/wiring, as in AWS,
// so what runs here is what is deployed.
//
// Start(ctx, Options) returns a running *Stack; Stack.Info says where everything listens and
// which accounts it made; Stack.Close stops it and frees its ports, once (a second Close, a
// test's cleanup after its own, does nothing; a failed Start has closed what it opened). Empty
// addresses in Options are free ports on 127.0.0.1, so tests start as many stacks as they need
// side by side. `make run` is the thin command in cmd/devstack, which reads its addresses and
// settings from the environment and prints Info as its banner.
//
// Every test and benchmark of the whole service starts it too, so one library assembles them all:
// internal/loadtest's rigs, the fault campaign (internal/chaos), the bootstraps under the Lambda
// emulator (internal/lambdatest), internal/wiring's benchmark and the doors' fuzz rig, and this
// package's signer benchmark. The options they need:
//
//   - the clock: Options.Clock runs the service and the network on one virtual clock
//     (internal/vclock); CloseLedgers replaces the close rule (a schedule of its own, work after
//     every close), Network adjusts the network's options (ExpectedCloseInterval, lanes and surge
//     pricing, apply order);
//   - the service: Getenv's settings (STELLAR_BACKEND=horizon runs it on the stack's Horizon,
//     CHANNEL_COUNT, VAULT_CONTRACT=local, MAX_FEE_STROOPS), Keys (a test's own seeds: channel
//     accounts the same in every run, the vault's key for an operator), VaultUSDC and FeeXLM (the
//     opening balances), APIOnly (the API function alone: no stream, alert, reconcile or
//     submitter function, no sweep, no Invoke API) and Queue (its async transfers);
//   - the clients and servers: WrapDynamo wraps the DynamoDB client (counting, round trips in
//     virtual time, injected faults), DynamoOptions adjusts it, InProcessDynamo reaches the
//     embedded DynamoDB without a socket; WrapStellar wraps the service's Stellar transport (round
//     trips, request counts); WrapHandler wraps the embedded DynamoDB's and the network's handlers
//     (logging what separate processes send);
//   - more than one service: Stack.Deps builds another process of the same deployment over the
//     same table and network (an execution environment per caller, SubmitterFunction's
//     containers), and Options.Beside starts a second service with its own accounts and table on
//     a stack's network (services compared under the same congestion). Stack.Minidyn (failure
//     emulation) and Stack.Vaults (the contract host) reach the emulators.
//
// internal/stellar's own rigs test the ledger, not the service: they start the network alone.
//
// It is never deployed, and it differs from AWS where a machine cannot follow it: one process
// runs every function, the stream and the SQS event source are in-memory loops, and the
// Stellar network is the local model (internal/stellarsim's doc.go lists what it does not model).
//
// # A tour by hand
//
// README.md's "Try it" starts a stack with `make run` and pastes its export line (API, LAMBDA,
// DYNAMO, SIM, WALLET). These go on from there, in this order on the same stack, but for the
// limits and the vault contract, which need a restart; the outputs show the shape (hashes, times
// and ledgers differ).
//
// Paying an exchange (README.md, "Paying an exchange: memos and muxed wallets"): a memo payment,
// a muxed (M...) payment, the same key to another id of the same account, a memo too long:
//
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: exchange-00000001' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"25","asset":"USDC","memo":{"type":"id","value":"1234567"}}'
//	# -> {"transactionHash":"50bdc355...4307f2","ledger":9,"replayed":false}
//	MUXED=$(curl -s "$SIM/_sim/muxed/$WALLET/42" | jq -r .muxed)   # the wallet's M... address with id 42
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: exchange-00000002' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$MUXED"'","amount":"10","asset":"USDC"}'
//	# -> {"transactionHash":"1962f81c...e583b9","ledger":10,"replayed":false}
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: exchange-00000002' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$(curl -s "$SIM/_sim/muxed/$WALLET/43" | jq -r .muxed)"'","amount":"10","asset":"USDC"}'
//	# -> 409 {"code":"IDEMPOTENCY_KEY_CONFLICT",...}: the same key to id 43 of the same account
//	curl -s -w '\n' "$API/wallets/$MUXED/transfers/exchange-00000002"
//	# -> {"status":"success","transactionHash":"1962f81c...e583b9","ledger":10,
//	#     "muxedAccount":{"address":"MAFUXARD...AFK2OW","account":"GAFUXARD...M7HK4","id":"42"},...}
//	curl -s "$SIM/_sim/transactions" | jq -c '.transactions[-2:][] | {memo_type, memo, operations: [.operations[] | {destination, destination_muxed_id, amount}]}'
//	# -> {"memo_type":"id","memo":"1234567","operations":[{"destination":"GAFUXARD...M7HK4","destination_muxed_id":null,"amount":250000000}]}
//	#    {"memo_type":"none","memo":null,"operations":[{"destination":"GAFUXARD...M7HK4","destination_muxed_id":"42","amount":100000000}]}
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: exchange-00000003' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"1","asset":"USDC","memo":{"type":"text","value":"a text memo of 29 bytes, 1234"}}'
//	# -> 422 {"code":"INVALID_MEMO","detail":"a text memo is at most 28 bytes; this one is 29 bytes (UTF-8)",...}
//
// Cancel (README.md, "Cancel"): 20 payouts at once; the last, still waiting in the queue, is
// cancelled:
//
//	for i in $(seq -w 1 20); do curl -s -o /dev/null -w '%{http_code} ' -X POST "$API/transfers" -H 'Prefer: respond-async' \
//	  -H 'Content-Type: application/json' -H "Idempotency-Key: batch-0000$i" \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"1","asset":"USDC"}'; done; echo   # 202 x 20
//	curl -s -w '\n' -X DELETE "$API/wallets/$WALLET/transfers/batch-000020"
//	# -> {"status":"cancelled","cancelledAt":"2026-12-02T07:19:59.240Z","cancelledBy":"anonymous",...}
//	#    the same again: the same body and the header Idempotent-Replayed: true
//	curl -s -w '\n' -X DELETE "$API/wallets/$WALLET/transfers/batch-000001"
//	# -> 409 {"code":"TRANSFER_NOT_CANCELLABLE","state":"in_flight",...}: a submitter had taken it
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: batch-000020' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"1","asset":"USDC"}'
//	# -> 409 {"code":"TRANSFER_CANCELLED","state":"cancelled",...}; the console shows its message
//	#    "delivery":"stale" (nothing sent) and the event Transfer Cancelled
//	# the 19 others hold every channel for a few ledgers: a transfer sent now may be answered
//	# 503 CHANNELS_BUSY (nothing sent): retry it with the same key after its Retry-After
//
// The daily report (README.md, "The daily reconciliation"): a day is reported once it is over, so
// on a fresh stack ask for today so far (answered, not stored), once the 19 payouts above have
// settled (about 20 s; before, those still queued are listed in "unsettled" and those being sent in
// no list):
//
//	curl -s -w '\n' -X POST "$LAMBDA/2015-03-31/functions/ReconcileFunction/invocations" -d '{"action":"daily","soFar":true}'
//	# -> {"action":"daily","day":"2026-12-02","partial":true,"ok":true,"discrepancies":0,
//	#     "ledgers":{"first":1,"last":21,"firstClose":"2026-12-02T11:11:47Z","lastClose":"2026-12-02T11:13:27Z","transactions":24},
//	#     "matched":23,"assets":[{"asset":"USDC","paidOut":790000000,"received":0,"net":-790000000,"chainNet":-790000000,
//	#     "inDoubtNet":0,"unexplainedNet":0,"actualReadable":true,"actualNet":-790000000,"opening":10000000000000,
//	#     "closing":9999210000000,"difference":0,"balanceMismatch":false}],"counts":{...all 0},
//	#     "absentOnChain":[],"failedOnChain":[],"mismatched":[],"unexplained":[],"otherOperations":[],...}
//	#    (the steps above in order: order-00000001, payout-000001, the two exchange payments and the 19
//	#    payouts not cancelled, 79 USDC; amounts in stroops; 24 transactions with the channel accounts'
//	#    creation; the ledgers depend on when you ask). {"action":"daily"} reports yesterday and stores it;
//	#    {"action":"report","day":"YYYY-MM-DD"} reads a stored one again
//
// Limits (README.md, "Limits") need a restart: stop the stack (Ctrl-C), start it with
// LIMITS='{"USDC":{"perTransfer":"5000","walletDaily":"20"}}' make run (with your PORT_BASE; the
// banner's line "Limits (LIMITS)    USDC: per transfer 5000 USDC, wallet daily 20 USDC" shows
// them), paste its new export line (a new stack: a new WALLET, an empty table), then:
//
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: order-00000001' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"12.5","asset":"USDC"}'   # the wallet's day: 12.5 of 20
//	curl -si -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: order-00000002' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"10","asset":"USDC"}'
//	# -> HTTP/1.1 429 Too Many Requests, Retry-After: 58669 (seconds to the next UTC midnight)
//	#    {"code":"DAILY_LIMIT_EXCEEDED","classification":"retryable","limit":"wallet","limitCap":"20",
//	#     "detail":"This transfer would take the wallet's daily total of USDC on 2026-12-02 (UTC) above its
//	#     limit of 20; nothing was submitted and the key is free. The limit frees at 2026-12-03T00:00:00Z.",...}
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: order-00000002' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"5000.5","asset":"USDC"}'
//	# -> 422 {"code":"AMOUNT_ABOVE_LIMIT","limit":"per-transfer","limitCap":"5000",...}
//
// The vault contract (README.md, "The vault contract (Soroban)"): VAULT_CONTRACT=local make run
// sends transfers through the contract the stack deploys (vaultContract in /_sim/stack):
//
//	C=$(curl -s "$SIM/_sim/stack" | jq -r '.vaultContract')
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: deposit-0001' \
//	  -d '{"operationType":"deposit","walletAddress":"'"$WALLET"'","amount":"12.5","asset":"USDC"}'
//	curl -s -w '\n' -X POST "$API/transfers" -H 'Content-Type: application/json' -H 'Idempotency-Key: withdraw-0001' \
//	  -d '{"operationType":"withdraw","walletAddress":"'"$WALLET"'","amount":"2.5","asset":"USDC"}'
//	curl -s -w '\n' "$SIM/_sim/vaults/$C/balances/$WALLET"                # {"amount":"100000000",...}
//	curl -s -w '\n' -X POST "$SIM/_sim/vaults/$C/balances/$WALLET/archive"   # the next call restores it itself
package devstack
