package stellar

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// admitTickets is the channel calendar in memory (as internal/dynamo's TakeTicket keeps it: the
// next number and its time, never before from), counting its bookings.
type admitTickets struct {
	mu     sync.Mutex
	next   int64
	nextAt time.Time
	calls  int
}

func (m *admitTickets) TakeTicket(_ context.Context, from time.Time, spacing, horizon time.Duration) (int64, time.Time, bool, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	n, at, restarted, was := m.next, m.nextAt, false, time.Time{}
	if at.Before(from) || horizon > 0 && at.After(from.Add(horizon)) {
		was = at // zero on a new calendar
		at, restarted = from, true
	}
	m.next, m.nextAt = n+1, at.Add(spacing)
	return n, at, restarted, was, nil
}

func (m *admitTickets) booked() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// admitLedgerPool is a calendar-scheduled pool of 4 channels derived from fresh test keys (no
// listed channels), its latest ledger closed 4 s before the clock's now (the release points, 0.6
// into a ledger from a second after its close time, on now + 5k s), for the ledger's admission
// tests; it returns the keys, the channel keys, the pool and that close time.
func admitLedgerPool(t *testing.T, clock *vclock.Clock, tickets sources.TicketStore) (signing.Keys, []*keypair.Full, *sources.ChannelPool, time.Time) {
	t.Helper()
	keys := sourcestest.Keys(t)
	keys.Channels = nil
	chans, err := sources.ChannelKeys(keys, 4)
	if err != nil {
		t.Fatal(err)
	}
	lastClose := clock.Now().Add(-4 * time.Second)
	pool, err := sources.NewChannelPool(sources.ChannelPoolConfig{Leases: &sourcestest.Leases{}, Tickets: tickets, Count: 4, Clock: clock,
		LedgerInterval: func() time.Duration { return 5 * time.Second },
		LatestClose:    func(context.Context) time.Time { return lastClose }})
	if err != nil {
		t.Fatal(err)
	}
	return keys, chans, pool, lastClose
}

// The ledger's admission leaves a request Prepare would refuse before asking for a source to
// Prepare: with every slot beyond the wait, a withdrawal of an unknown asset, to a C... wallet,
// to the vault or to a channel account, or a deposit, is not answered CHANNELS_BUSY (the client
// would retry a request that can never go through) and books no slot. A valid request is
// answered busy; without channels nothing is decided.
func TestAdmitLeavesARefusedRequestToPrepare(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &admitTickets{next: 6, nextAt: clock.Now().Add(20 * time.Second)}
	keys, chans, pool, _ := admitLedgerPool(t, clock, tickets)
	assets := usdcOnly()
	c, err := newCommon("test", keys.Vault.Address(), assets, 100, 0, 90, signing.StaticKeys{K: keys}, pool, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	wallet := keypair.MustRandom().Address()
	contract := strkey.MustEncode(strkey.VersionByteContract, make([]byte, 32))
	ctx := context.Background()
	maxTime := clock.Now().Add(60 * time.Second)
	for name, req := range map[string]transfer.Request{
		"unknown asset":     {OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: "EURC", Stroops: 1},
		"contract wallet":   {OperationType: transfer.Withdraw, WalletAddress: contract, Asset: "USDC", Stroops: 1},
		"the vault":         {OperationType: transfer.Withdraw, WalletAddress: keys.Vault.Address(), Asset: "USDC", Stroops: 1},
		"a channel account": {OperationType: transfer.Withdraw, WalletAddress: chans[1].Address(), Asset: "USDC", Stroops: 1},
		"a deposit":         {OperationType: transfer.Deposit, WalletAddress: wallet, Asset: "USDC", Stroops: 1},
	} {
		if _, err := c.Admit(ctx, req, maxTime); err != nil {
			t.Errorf("%s: %v, want nil (Prepare refuses it)", name, err)
		}
	}
	if n := tickets.booked(); n != 0 {
		t.Fatalf("%d bookings for requests Prepare refuses", n)
	}
	_, err = c.Admit(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: "USDC", Stroops: 1}, maxTime)
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != transfer.CodeChannelsBusy || ue.RetryAfter != 20*time.Second {
		t.Fatalf("%v, want CHANNELS_BUSY with Retry-After 20s", err)
	}
	vaultOnly, err := newCommon("test", keys.Vault.Address(), assets, 100, 0, 90, signing.StaticKeys{K: keys}, nil, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vaultOnly.Admit(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: "USDC", Stroops: 1}, maxTime); err != nil {
		t.Fatalf("without channels: %v, want nil", err)
	}
}

// With channels but no fee account key, the pool refuses before it books (no fee to pay the
// channels' fee bumps) and Prepare answers that. The admission leaves the request to Prepare
// rather than answer CHANNELS_BUSY, whose Retry-After would send the client back to the same
// refusal, and books no slot.
func TestAdmitLeavesAPoolWithoutItsFeeKeyToPrepare(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &admitTickets{next: 6, nextAt: clock.Now().Add(20 * time.Second)}
	keys, _, pool, lastClose := admitLedgerPool(t, clock, tickets)
	noFee := keys
	noFee.Fee, noFee.FeeSigner = nil, nil
	c, err := newCommon("test", keys.Vault.Address(), usdcOnly(), 100, 0, 90, signing.StaticKeys{K: noFee}, pool, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: keypair.MustRandom().Address(), Asset: "USDC", Stroops: 1}
	maxTime := clock.Now().Add(60 * time.Second)
	if _, err := c.Admit(context.Background(), req, maxTime); err != nil {
		t.Errorf("Admit without a fee key: %v, want nil (Prepare refuses it)", err)
	}
	if n := tickets.booked(); n != 0 {
		t.Errorf("%d bookings without a fee key, want 0", n)
	}
	if _, err := pool.Acquire(context.Background(), noFee, sources.LeaseTerms{Until: maxTime, MaxTime: maxTime, LedgerClose: lastClose}); !errors.Is(err, sources.ErrNoChannels) {
		t.Errorf("the pool without a fee key: %v, want ErrNoChannels (the premise of this test)", err)
	}
}
