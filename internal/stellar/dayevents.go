package stellar

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Which of a day's transactions concern the vault, found by their events rather than by reading
// every transaction of the day (pubnet closes millions a day: gigabytes through getTransactions).
//
// Since protocol 23 every classic operation that moves an asset emits the Stellar Asset
// Contract's event for it (CAP-67 unified events: stellar-core src/transactions/EventManager.cpp,
// OpEventManager::eventForTransferWithIssuerCheck, newTransferEvent, newMintEvent, newBurnEvent,
// newClawbackEvent), and every transaction a fee event ["fee", feeSource] whether it succeeds or
// fails (TxEventManager::newFeeEvent, at TRANSACTION_EVENT_STAGE_BEFORE_ALL_TXS from
// src/ledger/LedgerManagerImpl.cpp; TransactionMeta.cpp, TransactionMetaBuilder::finalize keeps
// transaction events of failed transactions, operation events only of successful ones). Core
// emits them only with EMIT_CLASSIC_EVENTS, which stellar-rpc's captive core always has
// (stellar-rpc cmd/stellar-rpc/internal/daemon/daemon.go, EmitUnifiedEvents: true;
// go-stellar-sdk ingest/ledgerbackend/toml.go enforces EMIT_CLASSIC_EVENTS from protocol 23),
// and stellar-rpc stores them, failed transactions' included (cmd/stellar-rpc/internal/db/event.go,
// InsertEvents), for its history-retention-window like transactions. A transfer's topics name
// the G... account of a muxed address (getAddressWithDroppedMuxedInfo), so the vault's address
// matches every payment from or to it.
//
// So the day's transactions that concern the vault are those with an event that names it:
//   - a transfer from or to the vault, a mint to it, a burn or clawback from it, of any asset's
//     contract (a configured asset's payments, and the other assets' and lumens' movements that
//     ChainDay.Other lists);
//   - a fee paid by the vault or by the fee account: every transaction the service sends (the
//     vault's own, and the channels' in the fee account's fee bumps), failed ones included, which
//     is how ChainDay.Failed still holds the service's failed transactions;
//   - in contract mode, any event of a vault contract, and a transfer from or to one.
//
// What that leaves out: a stranger's failed transaction that meant to pay the vault (it moved
// nothing and is no transfer of the service's), a failed transaction whose fee another account
// paid (a fee account replaced during the day), and what moves no asset (a SetOptions, a
// ChangeTrust: ChainDay never listed them). Every change of the vault's trustline balance comes
// with one of these events, so the balance movement read from the named transactions' metadata
// is the whole day's.
//
// getEvents (cmd/stellar-rpc/internal/methods/get_events.go) takes at most 5 filters of at most
// 5 contract ids and 5 topic filters of up to 4 segments ("*" one, a trailing "**" any number;
// go-stellar-sdk protocols/rpc/get_events.go, MaxFiltersLimit, MaxTopicsLimit), answers at most
// max-events-limit events a page (10,000 by default, config/options.go) and scans at most
// LedgerScanLimit (10,000) ledgers a request: a page short of its limit ends at that window's
// end, its cursor there. The day's transactions named are then read with getTransaction, one
// call each: their envelopes (memo, fee bump, operations) and metadata (the balance changes).

// dayEventsPage is how many events one getEvents call asks for: below stellar-rpc's
// max-events-limit default (10,000), a page of at most a few megabytes. A variable only so that
// a test can page a few events at a time (SetDayEventsPageForTest).
var dayEventsPage uint = 1000

// dayFilters are the getEvents filters of the events that name the vault (see above), in groups
// of at most protocol.MaxFiltersLimit: one getEvents scan of the day per group.
func (l *RPCLedger) dayFilters(ctx context.Context, cl *ContractLedger) ([][]protocol.EventFilter, error) {
	contract := protocol.EventTypeSet{protocol.EventTypeContract: nil}
	addressVal := func(a rawAddress) protocol.SegmentFilter {
		sa := a.scAddress()
		return protocol.SegmentFilter{ScVal: &xdr.ScVal{Type: xdr.ScValTypeScvAddress, Address: &sa}}
	}
	sym := func(s string) protocol.SegmentFilter {
		v := xdr.ScSymbol(s)
		return protocol.SegmentFilter{ScVal: &xdr.ScVal{Type: xdr.ScValTypeScvSymbol, Sym: &v}}
	}
	one, many := protocol.WildCardExactOne, protocol.WildCardZeroOrMore
	anyOne, rest := protocol.SegmentFilter{Wildcard: &one}, protocol.SegmentFilter{Wildcard: &many}
	// moves is the filter of the asset movements from or to a: any contract's, so that a lumen or
	// another asset's payment of the vault is found too (a SEP-41 token's transfer has three
	// topics, the Stellar Asset Contract's four: "**" takes both).
	moves := func(a rawAddress) protocol.EventFilter {
		return protocol.EventFilter{EventType: contract, Topics: []protocol.TopicFilter{
			{sym("transfer"), addressVal(a), rest},
			{sym("transfer"), anyOne, addressVal(a), rest},
			{sym("mint"), addressVal(a), rest},
			{sym("burn"), addressVal(a), rest},
			{sym("clawback"), addressVal(a), rest},
		}}
	}
	native, err := xdr.MustNewNativeAsset().ContractID(l.passphrase)
	if err != nil {
		return nil, fmt.Errorf("stellar: the lumen's contract id: %w", err)
	}
	fees := protocol.EventFilter{EventType: contract, ContractIDs: []string{strkey.MustEncode(strkey.VersionByteContract, native[:])},
		Topics: []protocol.TopicFilter{{sym("fee"), addressVal(l.vault)}}}
	keys, err := l.loadKeys(ctx)
	if err != nil {
		return nil, err
	}
	if fk := keys.FeeKey(); fk != nil && fk.Address() != l.vaultAccount {
		fee, err := decodeAccount(fk.Address())
		if err != nil {
			return nil, fmt.Errorf("stellar: the fee account: %w", err)
		}
		fees.Topics = append(fees.Topics, protocol.TopicFilter{sym("fee"), addressVal(fee)})
	}
	filters := []protocol.EventFilter{moves(l.vault), fees}
	if cl != nil {
		var ids []string
		codes := make([]string, 0, len(cl.contracts))
		for code := range cl.contracts {
			codes = append(codes, code)
		}
		sort.Strings(codes)
		for _, code := range codes {
			c := cl.contracts[code]
			filters = append(filters, moves(c))
			ids = append(ids, c.String())
		}
		for len(ids) > 0 {
			n := min(len(ids), protocol.MaxContractIDsLimit)
			filters = append(filters, protocol.EventFilter{ContractIDs: ids[:n]})
			ids = ids[n:]
		}
	}
	var groups [][]protocol.EventFilter
	for len(filters) > 0 {
		n := min(len(filters), protocol.MaxFiltersLimit)
		groups = append(groups, filters[:n])
		filters = filters[n:]
	}
	return groups, nil
}

// dayTxHashes are the hashes (a fee bump's outer one: stellar-rpc's txHash) of the transactions
// of ledgers first to last with an event the filters match, each once, by getEvents from first
// to last. ErrHistoryNotCovered when RPC's history no longer holds first; an error when the
// instance answers up to a ledger before last (a lagging one) or its cursor does not move.
func (l *RPCLedger) dayTxHashes(ctx context.Context, first, last uint32, groups [][]protocol.EventFilter) ([]string, error) {
	seen := map[string]bool{}
	var hashes []string
	for _, filters := range groups {
		req := protocol.GetEventsRequest{StartLedger: first, EndLedger: last + 1, Filters: filters,
			Pagination: &protocol.PaginationOptions{Limit: dayEventsPage}}
		for {
			resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetEventsResponse, error) {
				return c.GetEvents(ctx, req)
			})
			if err != nil {
				return nil, fmt.Errorf("stellar: getEvents: %w", err)
			}
			if resp.OldestLedger > first {
				return nil, fmt.Errorf("stellar: %w: RPC's history now starts at ledger %d, after the day's first ledger %d",
					transfer.ErrHistoryNotCovered, resp.OldestLedger, first)
			}
			for _, ev := range resp.Events {
				if ev.Ledger < 0 || uint32(ev.Ledger) < first || uint32(ev.Ledger) > last {
					continue // a page read on from a cursor has no end ledger
				}
				if !seen[ev.TransactionHash] {
					seen[ev.TransactionHash] = true
					hashes = append(hashes, ev.TransactionHash)
				}
			}
			cur, err := protocol.ParseCursor(resp.Cursor)
			if err != nil {
				return nil, fmt.Errorf("stellar: getEvents: cursor %q: %w", resp.Cursor, err)
			}
			full := uint(len(resp.Events)) >= dayEventsPage
			if !full && cur.Ledger >= last || full && cur.Ledger > last {
				break // read through the day's last ledger
			}
			if !full && resp.LatestLedger < last {
				// A short page ends the window at the latest ledger this instance holds: it must
				// hold the day's last ledger, or ledgers are missing (a lagging instance).
				return nil, fmt.Errorf("stellar: getEvents answered up to ledger %d, before the day's last ledger %d", resp.LatestLedger, last)
			}
			if prev := req.Pagination.Cursor; prev != nil && *prev == cur {
				return nil, fmt.Errorf("stellar: getEvents: the cursor did not move (%q)", resp.Cursor)
			}
			req = protocol.GetEventsRequest{Filters: filters, Pagination: &protocol.PaginationOptions{Cursor: &cur, Limit: dayEventsPage}}
		}
	}
	return hashes, nil
}

// dayTxReaders is how many getTransaction calls a day's read keeps in flight: a vault of a
// thousand transactions a day is a thousand calls, too many to make one after another within one
// invocation (55 s) at tens of milliseconds each; eight at a time stays a light load on one RPC.
const dayTxReaders = 8

// dayTransactions reads the transactions of hashes with getTransaction, dayTxReaders at a time,
// in ledger and application order. A hash RPC no longer finds is ErrHistoryNotCovered when its
// history starts after first (trimmed while reading), an error otherwise; the first error stops
// the calls not yet made.
func (l *RPCLedger) dayTransactions(ctx context.Context, first uint32, hashes []string) ([]protocol.TransactionInfo, error) {
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	txs := make([]protocol.TransactionInfo, len(hashes))
	var once sync.Once
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(dayTxReaders, len(hashes)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				tx, err := l.dayTransaction(ctx, first, hashes[i])
				if err != nil {
					once.Do(func() { firstErr = err }) // before cancel: the calls it cancels fail after
					cancel()
					continue
				}
				txs[i] = tx
			}
		}()
	}
feed:
	for i := range hashes {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := parent.Err(); err != nil {
		return nil, fmt.Errorf("stellar: getTransaction: %w", err)
	}
	sort.SliceStable(txs, func(i, j int) bool {
		if txs[i].Ledger != txs[j].Ledger {
			return txs[i].Ledger < txs[j].Ledger
		}
		return txs[i].ApplicationOrder < txs[j].ApplicationOrder
	})
	return txs, nil
}

// dayTransaction is getTransaction of hash, which getEvents named in a day from ledger first.
func (l *RPCLedger) dayTransaction(ctx context.Context, first uint32, hash string) (protocol.TransactionInfo, error) {
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetTransactionResponse, error) {
		return c.GetTransaction(ctx, protocol.GetTransactionRequest{Hash: hash})
	})
	if err != nil {
		return protocol.TransactionInfo{}, fmt.Errorf("stellar: getTransaction %s: %w", hash, err)
	}
	if resp.Status == protocol.TransactionStatusNotFound {
		if resp.OldestLedger > first {
			return protocol.TransactionInfo{}, fmt.Errorf("stellar: %w: RPC's history now starts at ledger %d, after the day's first ledger %d",
				transfer.ErrHistoryNotCovered, resp.OldestLedger, first)
		}
		return protocol.TransactionInfo{}, fmt.Errorf("stellar: getTransaction %s: not found, though getEvents named it", hash)
	}
	return protocol.TransactionInfo{TransactionDetails: resp.TransactionDetails, LedgerCloseTime: resp.LedgerCloseTime}, nil
}
