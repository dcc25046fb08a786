package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// caller is one client call's fault dice, carried in its context so that the decorators below
// attribute every fault to the call that met it.
type caller struct {
	rng     *rand.Rand
	faulty  bool // faults are on (off once healed)
	crashed bool
}

type callerKey struct{}

func withCaller(ctx context.Context, c *caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerOf(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// roll reports whether a fault happens now, with probability p, for a faulty caller.
func (c *caller) roll(p float64) bool { return c != nil && c.faulty && c.rng.Float64() < p }

// counter counts events by name.
type counter struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *counter) add(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[name]++
}

func (c *counter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

var errInjected = errors.New("chaos: injected fault")

// faultyDynamo fails DynamoDB requests on purpose: before the request (nothing written), after it
// (written, answer lost), or throttled.
type faultyDynamo struct {
	dynamotest.API
	rate   float64
	faults *counter
}

// countingStore counts the in-doubt transitions that were written (whatever their caller was told).
type countingStore struct {
	transfer.Store
	events *counter
}

func (s countingStore) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	err := s.Store.Replace(ctx, next, cond)
	if err == nil || errors.Is(err, errInjected) { // an injected error after the write still wrote
		s.count(next.Status, cond.Status, err)
	}
	return err
}

func (s countingStore) Delete(ctx context.Context, key string, cond transfer.Condition) error {
	err := s.Store.Delete(ctx, key, cond)
	if err == nil || errors.Is(err, errInjected) {
		s.count("", cond.Status, err)
	}
	return err
}

func (s countingStore) count(to, from transfer.Status, err error) {
	if err != nil && !strings.Contains(err.Error(), "answer lost") {
		return // refused before the write: nothing changed
	}
	switch {
	case to == transfer.StatusInDoubt && from != transfer.StatusInDoubt:
		s.events.add("in_doubt_opened")
	case from == transfer.StatusInDoubt && to != transfer.StatusInDoubt:
		s.events.add("in_doubt_closed")
	}
}

func (d *faultyDynamo) before(ctx context.Context, op string) error {
	c := callerOf(ctx)
	if !c.roll(d.rate) {
		return nil
	}
	switch c.rng.IntN(3) {
	case 0:
		d.faults.add("dynamo_" + op + "_error")
		return fmt.Errorf("%w: %s internal error", errInjected, op)
	case 1:
		d.faults.add("dynamo_" + op + "_throttled")
		return &types.ProvisionedThroughputExceededException{Message: aws.String("chaos: throttled")}
	}
	return nil
}

// after decides whether a request that succeeded loses its answer.
func (d *faultyDynamo) after(ctx context.Context, op string) error {
	if c := callerOf(ctx); c.roll(d.rate / 2) {
		d.faults.add("dynamo_" + op + "_answer_lost")
		return fmt.Errorf("%w: %s answer lost after the write", errInjected, op)
	}
	return nil
}

func (d *faultyDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if err := d.before(ctx, "put"); err != nil {
		return nil, err
	}
	out, err := d.API.PutItem(ctx, in, opt...)
	if err == nil {
		err = d.after(ctx, "put")
	}
	return out, err
}

func (d *faultyDynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if err := d.before(ctx, "delete"); err != nil {
		return nil, err
	}
	out, err := d.API.DeleteItem(ctx, in, opt...)
	if err == nil {
		err = d.after(ctx, "delete")
	}
	return out, err
}

func (d *faultyDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := d.before(ctx, "get"); err != nil {
		return nil, err
	}
	return d.API.GetItem(ctx, in, opt...)
}

// faultyLedger injects the local network's faults into the send it is about to make (one at a
// time, so that the fault meets the call that rolled it), refuses connections, loses lookups,
// and counts prepares and sends.
type faultyLedger struct {
	transfer.Ledger
	net        *stellarsim.Network
	rate       float64 // per send
	lookupRate float64
	faults     *counter
	events     *counter

	sendMu sync.Mutex
	mu     sync.Mutex
	sent   map[string]bool   // inner hashes sent at least once
	built  map[string]int    // prepares per wallet+amount (one key each)
	owner  map[string]string // every hash prepared -> wallet+amount
}

// networkFaults are the local network's submission faults the campaign draws from.
var networkFaults = []stellarsim.Fault{
	{Kind: stellarsim.FaultRefuse},
	{Kind: stellarsim.FaultDropResponse},
	{Kind: stellarsim.FaultDelay, Delay: 2 * time.Millisecond},
	{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater},
	{Kind: stellarsim.FaultAnswer, Code: "txBAD_SEQ"},
	{Kind: stellarsim.FaultAnswer, Code: "txINSUFFICIENT_FEE"},
	{Kind: stellarsim.FaultAnswer, HTTPStatus: 504},
	{Kind: stellarsim.FaultAnswer, HTTPStatus: 500},
	{Kind: stellarsim.FaultDropEnvelope},
	{Kind: stellarsim.FaultDelayInclusion, Ledgers: 2},
}

func faultName(f stellarsim.Fault) string {
	switch {
	case f.Code != "":
		return f.Kind + "_" + f.Code
	case f.Status != "":
		return f.Kind + "_" + f.Status
	case f.HTTPStatus != 0:
		return fmt.Sprintf("%s_http_%d", f.Kind, f.HTTPStatus)
	}
	return f.Kind
}

func (l *faultyLedger) Prepare(ctx context.Context, req transfer.Request, maxTime time.Time) (transfer.Envelope, error) {
	env, err := l.Ledger.Prepare(ctx, req, maxTime)
	if err == nil {
		l.mu.Lock()
		id := req.WalletAddress + "/" + req.Amount
		l.owner[env.InnerHash] = id
		if env.OuterHash != "" {
			l.owner[env.OuterHash] = id
		}
		l.built[id]++
		if l.built[id] > 1 {
			l.events.add("rebuilds")
		}
		l.mu.Unlock()
	}
	return env, err
}

// ownerOf returns the wallet+amount an envelope hash was prepared for.
func (l *faultyLedger) ownerOf(hash string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.owner[hash]
	return id, ok
}

func (l *faultyLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	l.mu.Lock()
	if l.sent[env.InnerHash] {
		l.events.add("resends")
	}
	l.sent[env.InnerHash] = true
	l.mu.Unlock()
	// Sends go one at a time, so that a fault armed for this send (Count 1: the next submission)
	// meets this send and no other caller's.
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	c := callerOf(ctx)
	if !c.roll(l.rate) {
		return l.Ledger.Send(ctx, env)
	}
	if c.rng.IntN(len(networkFaults)+1) == 0 {
		l.faults.add("connection_refused")
		return transfer.SendResult{}, fmt.Errorf("%w: dial tcp: connection refused: %w", errInjected, transfer.ErrNotSent)
	}
	f := networkFaults[c.rng.IntN(len(networkFaults))]
	f.Count = 1
	l.faults.add(faultName(f))
	l.net.InjectFault(f)
	return l.Ledger.Send(ctx, env)
}

func (l *faultyLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if c := callerOf(ctx); c.roll(l.lookupRate) {
		l.faults.add("lookup_lost")
		return transfer.Lookup{}, fmt.Errorf("%w: getTransaction timed out", errInjected)
	}
	return l.Ledger.Lookup(ctx, env)
}
