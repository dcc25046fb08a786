package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// caller is one client call's fault dice, carried in its context so that the decorators below
// attribute every fault to the call that met it.
type caller struct {
	name    string // who it is, in traces: "key 12 caller 3", "sweep 4" (the wave), "operator 4"
	rng     *rand.Rand
	faulty  bool // faults are on (off once healed)
	crashed bool
	// inv is the SubmitterFunction invocation the call runs in (async mode), nil otherwise.
	inv *invocation
	// applied says whether the caller's last DynamoDB write changed the table, whatever answer
	// the caller got (an answer lost after the write, or a retry that failed its condition
	// against the item the first attempt wrote).
	applied bool
	// sends counts the envelopes the caller's calls handed to the ledger (faultyLedger.Send), and
	// sentHashes holds their inner hashes in that order.
	sends      atomic.Int64
	sentMu     sync.Mutex
	sentHashes []string
}

// sentSince returns the inner hashes of the envelopes the caller sent from its n-th send on.
func (c *caller) sentSince(n int64) []string {
	c.sentMu.Lock()
	defer c.sentMu.Unlock()
	if n >= int64(len(c.sentHashes)) {
		return nil
	}
	return append([]string(nil), c.sentHashes[n:]...)
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

// gone reports whether the caller runs in a SubmitterFunction invocation that crashed: its
// process is dead, so no request of it reaches DynamoDB or the network any more.
func (c *caller) gone() bool { return c != nil && c.inv != nil && c.inv.dead.Load() }

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

func (c *counter) addN(name string, n int) {
	if n <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int{}
	}
	c.m[name] += n
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
// (written, answer lost; every kind of write: claim, replace, delete, channel lease and release),
// or throttled.
type faultyDynamo struct {
	dynamotest.API
	rate   float64
	faults *counter
	// charged tallies the charges of the claims that applied (Config.Limits), nil otherwise.
	charged *charged
}

func (d *faultyDynamo) before(ctx context.Context, op string) error {
	c := callerOf(ctx)
	if c.gone() {
		return errCrash
	}
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

// write runs one DynamoDB write of the given kind through the faults: refused before it is sent
// (nothing written), or applied and its answer lost. A lost answer comes back one of two ways: as an
// error (the SDK gave up), or as the answer to the same request sent again, which is what the SDK's
// retry of a timed-out or reset request does; a conditional write retried after it applied fails its
// condition against the item it wrote itself.
func (d *faultyDynamo) write(ctx context.Context, kind string, do func() error) error {
	c := callerOf(ctx)
	if c != nil {
		c.applied = false
	}
	if err := d.before(ctx, kind); err != nil {
		return err
	}
	if err := do(); err != nil {
		return err
	}
	if c != nil {
		c.applied = true
	}
	if !c.roll(d.rate / 2) {
		return nil
	}
	if c.rng.IntN(2) == 0 {
		d.faults.add("dynamo_" + kind + "_answer_lost")
		return fmt.Errorf("%w: %s answer lost after the write", errInjected, kind)
	}
	d.faults.add("dynamo_" + kind + "_answer_lost_retried")
	return do()
}

// putKind names a PutItem by what it writes: claim_put (a new claim: attribute_not_exists or
// expired), replace_put (a conditional replace of a transfer item: its condition names the version),
// lease_put (a channel account lease) or batch_put (a batch item).
func putKind(in *dynamodb.PutItemInput) string {
	if pk, ok := in.Item[dynamo.AttrPK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, dynamo.ChannelPrefix) {
		return "lease_put"
	}
	if pk, ok := in.Item[dynamo.AttrPK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, transfer.BatchPrefix) {
		return "batch_put" // a batch's envelope (dynamo.Store.PutBatch)
	}
	for _, name := range in.ExpressionAttributeNames {
		if name == "version" {
			return "replace_put"
		}
	}
	return "claim_put"
}

// deleteKind names a DeleteItem: delete (a transfer item's release) or lease_delete (a channel
// account's release).
func deleteKind(in *dynamodb.DeleteItemInput) string {
	if pk, ok := in.Key[dynamo.AttrPK].(*types.AttributeValueMemberS); ok && strings.HasPrefix(pk.Value, dynamo.ChannelPrefix) {
		return "lease_delete"
	}
	return "delete"
}

func (d *faultyDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	var out *dynamodb.PutItemOutput
	err := d.write(ctx, putKind(in), func() (err error) {
		out, err = d.API.PutItem(ctx, in, opt...)
		return err
	})
	return out, err
}

func (d *faultyDynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	var out *dynamodb.DeleteItemOutput
	err := d.write(ctx, deleteKind(in), func() (err error) {
		out, err = d.API.DeleteItem(ctx, in, opt...)
		return err
	})
	return out, err
}

func (d *faultyDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, opt ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if err := d.before(ctx, "query"); err != nil {
		return nil, err
	}
	return d.API.Query(ctx, in, opt...)
}

func (d *faultyDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	if err := d.before(ctx, "get"); err != nil {
		return nil, err
	}
	return d.API.GetItem(ctx, in, opt...)
}

// BatchGetItem reads an event's items (dynamo.Store.GetMany) through the faults: refused or
// throttled before it is sent, or, as DynamoDB may answer any BatchGetItem, with some of its keys
// left unprocessed (UnprocessedKeys), which GetMany reads again after a backoff.
func (d *faultyDynamo) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	if err := d.before(ctx, "batch_get"); err != nil {
		return nil, err
	}
	bg, ok := d.API.(dynamo.BatchGetClient)
	if !ok {
		return nil, errors.New("chaos: the DynamoDB client has no BatchGetItem")
	}
	c := callerOf(ctx)
	if !c.roll(d.rate) {
		return bg.BatchGetItem(ctx, in, opt...)
	}
	// Ask for a part of each table's keys; the rest come back unprocessed.
	asked := &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{}}
	unprocessed := map[string]types.KeysAndAttributes{}
	for table, ka := range in.RequestItems {
		n := c.rng.IntN(len(ka.Keys) + 1)
		if n > 0 {
			part := ka
			part.Keys = ka.Keys[:n]
			asked.RequestItems[table] = part
		}
		if n < len(ka.Keys) {
			rest := ka
			rest.Keys = ka.Keys[n:]
			unprocessed[table] = rest
		}
	}
	d.faults.add("dynamo_batch_get_unprocessed")
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]map[string]types.AttributeValue{}}
	if len(asked.RequestItems) > 0 {
		got, err := bg.BatchGetItem(ctx, asked, opt...)
		if err != nil {
			return nil, err
		}
		out.Responses = got.Responses
		for table, ka := range got.UnprocessedKeys {
			rest := unprocessed[table]
			rest.Keys = append(slices.Clone(ka.Keys), rest.Keys...)
			if rest.ConsistentRead == nil {
				rest.ConsistentRead = ka.ConsistentRead
			}
			unprocessed[table] = rest
		}
	}
	out.UnprocessedKeys = unprocessed
	return out, nil
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
	// maxTime is every envelope's maxTime (epoch s) by inner hash.
	maxTime map[string]int64
	// cong checks each envelope built against MAX_FEE_STROOPS in the congestion run, nil in others.
	cong *congestion
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

func (l *faultyLedger) Prepare(ctx context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	env, err := l.Ledger.Prepare(ctx, req, terms)
	if err == nil && l.cong != nil {
		l.cong.prepared(env)
	}
	if err == nil {
		l.prepared(env, []transfer.Request{req})
	}
	return env, err
}

// prepared records an envelope built for reqs (one, or a batch's in operation order): its hashes'
// owner (the first request's wallet+amount), its maxTime, and a rebuild for each request built
// before.
func (l *faultyLedger) prepared(env transfer.Envelope, reqs []transfer.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxTime == nil {
		l.maxTime = map[string]int64{}
	}
	l.maxTime[env.InnerHash] = env.MaxTime
	for i, req := range reqs {
		id := req.WalletAddress + "/" + req.Amount
		if i == 0 {
			for _, h := range env.Hashes() {
				l.owner[h] = id
			}
		}
		l.built[id]++
		if l.built[id] > 1 {
			l.events.add("rebuilds")
		}
	}
}

// maxTimeOf is the maxTime of the envelope prepared with inner hash h, if one was.
func (l *faultyLedger) maxTimeOf(h string) (int64, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.maxTime[h]
	return t, ok
}

// ownerOf returns the wallet+amount an envelope hash was prepared for.
func (l *faultyLedger) ownerOf(hash string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	id, ok := l.owner[hash]
	return id, ok
}

func (l *faultyLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	if callerOf(ctx).gone() {
		return transfer.SendResult{}, fmt.Errorf("%w: %w", errCrash, transfer.ErrNotSent)
	}
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
	if c != nil {
		c.sentMu.Lock()
		c.sentHashes = append(c.sentHashes, env.InnerHash)
		c.sentMu.Unlock()
		c.sends.Add(1)
	}
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
	if callerOf(ctx).gone() {
		return transfer.Lookup{}, errCrash
	}
	if c := callerOf(ctx); c.roll(l.lookupRate) {
		l.faults.add("lookup_lost")
		return transfer.Lookup{}, fmt.Errorf("%w: getTransaction timed out", errInjected)
	}
	return l.Ledger.Lookup(ctx, env)
}

// LatestLedger passes the await's probes (transfer.LatestReader) through to the ledger, with the
// look-ups' fault rate: a probe lost, like a look-up, only changes when the await reads next. The
// network's read faults (read_order, instances) reach the probes too, so a probe and the look-up
// after it may be served by different instances.
func (l *faultyLedger) LatestLedger(ctx context.Context) (transfer.LedgerInfo, error) {
	lr, ok := l.Ledger.(transfer.LatestReader)
	if !ok {
		return transfer.LedgerInfo{}, fmt.Errorf("%w: the ledger has no probe", errInjected)
	}
	if c := callerOf(ctx); c.roll(l.lookupRate) {
		l.faults.add("probe_lost")
		return transfer.LedgerInfo{}, fmt.Errorf("%w: getLatestLedger timed out", errInjected)
	}
	return lr.LatestLedger(ctx)
}

var _ transfer.LatestReader = (*faultyLedger)(nil)
