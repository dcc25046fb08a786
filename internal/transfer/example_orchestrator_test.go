package transfer_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A withdrawal is claimed under its idempotency key, lands once, and a second call with the same
// key and request replays the stored outcome without building or sending anything. The same key
// with another request is a conflict.
func ExampleOrchestrator_Transfer() {
	ctx := context.Background()
	store := transfertest.NewStore()
	ledger := &landingLedger{}
	orch := &transfer.Orchestrator{
		Store:  store,
		Ledger: ledger,
		Clock:  vclock.New(time.Unix(1_800_000_000, 0)), // simulated time: polling waits cost nothing
		Logger: slog.New(slog.DiscardHandler),
		Hooks: func(_ context.Context, step transfer.Step, rec transfer.Record) error {
			fmt.Printf("  %-8s item %s, version %d\n", step, rec.Status, rec.Version)
			return nil
		},
	}
	rules := transfer.Rules{Assets: []string{"USDC"}, Addresses: anyAddress{}}
	withdraw := func(amount string) transfer.Input {
		req, err := rules.Canonicalize(transfer.RawRequest{
			OperationType: "withdraw", WalletAddress: exampleWallet, Amount: amount, Asset: "usdc",
		})
		if err != nil {
			panic(err)
		}
		return transfer.Input{ClientKey: "order-0001", Request: req}
	}

	fmt.Println("first call:")
	out, err := orch.Transfer(ctx, withdraw("10"))
	fmt.Printf("  landed %s... in ledger %d, replayed %v, err %v\n", out.TransactionHash[:16], out.Ledger, out.Replayed, err)

	fmt.Println("same key, same request:")
	out, err = orch.Transfer(ctx, withdraw("10"))
	fmt.Printf("  landed %s... in ledger %d, replayed %v, err %v\n", out.TransactionHash[:16], out.Ledger, out.Replayed, err)

	fmt.Println("same key, another amount:")
	_, err = orch.Transfer(ctx, withdraw("11"))
	var p transfer.ProblemError
	if errors.As(err, &p) {
		fmt.Printf("  refused: %s\n", p.Problem().Code)
	}

	rec, _ := store.Item(transfer.StoreKey(exampleWallet, "order-0001"))
	fmt.Printf("stored: %s, version %d; envelopes built %d, sent %d\n", rec.Status, rec.Version, ledger.built, ledger.sent)
	// Output:
	// first call:
	//   claimed  item in_flight, version 1
	//   prepared item in_flight, version 1
	//   attached item in_flight, version 2
	//   sent     item in_flight, version 2
	//   settling item in_flight, version 2
	//   landed f093a077f303ba3e... in ledger 101, replayed false, err <nil>
	// same key, same request:
	//   landed f093a077f303ba3e... in ledger 101, replayed true, err <nil>
	// same key, another amount:
	//   refused: IDEMPOTENCY_KEY_CONFLICT
	// stored: replayable, version 3; envelopes built 1, sent 1
}

const exampleWallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"

// landingLedger is a network on which every envelope sent lands in ledger 101 (one goroutine at a
// time: the example runs one call after another).
type landingLedger struct {
	built, sent int
	landed      map[string]bool
}

func (l *landingLedger) Prepare(_ context.Context, _ transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	l.built++
	sum := sha256.Sum256(fmt.Appendf(nil, "envelope %d", l.built)) // a real ledger hashes the signed transaction
	hash := hex.EncodeToString(sum[:])
	return transfer.Envelope{XDR: "AAAA" + hash, InnerHash: hash, MaxTime: terms.MaxTime.Unix(), SubmittedLedger: 100,
		Channel: "GVAULT", FeeStroops: 100}, nil
}

func (l *landingLedger) Send(_ context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	l.sent++
	if l.landed == nil {
		l.landed = map[string]bool{}
	}
	l.landed[env.InnerHash] = true
	return transfer.SendResult{Status: transfer.SendPending, LatestLedger: 100}, nil
}

func (l *landingLedger) Lookup(_ context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if !l.landed[env.InnerHash] {
		return transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: 100}, nil
	}
	return transfer.Lookup{Status: transfer.LookupSuccess, Hash: env.InnerHash, Ledger: 101, FeeChargedStroops: 100, LatestLedger: 101}, nil
}

func (l *landingLedger) Done(context.Context, transfer.Envelope) {}

// anyAddress takes every 56-character G... string as an account (a real service parses strkeys).
type anyAddress struct{}

func (anyAddress) ParseAddress(s string) (transfer.AddressKind, error) {
	if len(s) != 56 || s[0] != 'G' {
		return 0, errors.New("not a G... address")
	}
	return transfer.AccountAddress, nil
}
