package model

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The batch models' actors on the real code: the submitter is Orchestrator.RunQueuedBatch over
// both keys' messages, the synchronous caller Orchestrator.Transfer with A's request (its
// take-over re-sends the batch's envelope, its inline reconciliation judges A's own operation),
// and the sweep Orchestrator.Settle of each key, as reconcile's sweepOne calls it. The network's
// side of a batch is batchLedger (PrepareBatch builds the model's envelope paying the keys in
// order) and, in the batch models, the ledger adapter's batch answers (batchSend, batchLookup).

// batchLedger is the model's transfer.BatchLedger: no scheduling point (nothing outside the actor
// sees a build before it is written or sent), and every destination passes the check.
type batchLedger struct{ k *kit }

func (l batchLedger) PrepareBatch(_ context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	keys := make([]string, len(reqs))
	for i, req := range reqs {
		j := slices.IndexFunc(batchKeys, func(b batchKey) bool { return b.in.Request.WalletAddress == req.WalletAddress })
		if j < 0 {
			return transfer.Envelope{}, fmt.Errorf("model: a batch pays %s, no key's wallet", req.WalletAddress)
		}
		keys[i] = batchKeys[j].key
	}
	return l.k.r.w.buildBatch(l.k.name("envelope"), keys, terms.MaxTime), nil
}

func (batchLedger) CheckDestinations(_ context.Context, reqs []transfer.Request) ([]string, error) {
	return make([]string, len(reqs)), nil
}

// configureBatch binds k's Orchestrator to the batch path: BATCH_SIZE 2, the model's batch
// ledger, and its messages run on the actor's own goroutine.
func configureBatch(k *kit) {
	s := transfer.DefaultSettings()
	s.BatchSize = 2
	k.orch.Settings = func() transfer.Settings { return s }
	k.orch.Batches = batchLedger{k}
	k.orch.Serial = true
}

// batchSend is the ledger adapter's Send in the batch models: as send, and an envelope not yet on
// the network may be accepted with its answer lost (a transport error: it may be on the network).
func (l ledger) batchSend(env transfer.Envelope) (transfer.SendResult, error) {
	w := l.k.r.w
	p := point{kind: "Send", envHash: env.InnerHash}
	if l.k.r.tracing {
		p.desc = "Send " + w.envName(env.InnerHash)
	}
	v := l.k.r.point(l.k.a, p)
	if v == "accepted, answer lost" {
		w.envelope(env).fate = queued
		l.k.r.observe(l.k.a, v, v, func() string { return v })
		return transfer.SendResult{}, errors.New("model: the send's answer was lost")
	}
	res := w.send(env, v)
	l.k.r.observe(l.k.a, v, jsonOf(res), func() string { return string(res.Status) + " " + res.Code })
	return res, nil
}

// batchLookup is the ledger adapter's Lookup in the batch models: the batch's possible answers
// (batchLookupVariants), FAILED with one result per operation (lookupOf).
func (l ledger) batchLookup(env transfer.Envelope) (transfer.Lookup, error) {
	w := l.k.r.w
	e := w.envelope(env)
	p := point{kind: "Lookup", envHash: env.InnerHash, opts: func() []string { return w.batchLookupVariants(e) }}
	if l.k.r.tracing {
		p.desc = "Lookup " + e.name
	}
	v := l.k.r.point(l.k.a, p)
	w.batchLookup(e, v)
	lk := w.lookupOf(e)
	l.k.r.observe(l.k.a, v, fmt.Sprintf("%d%s", e.fate, e.failure), func() string { return e.fate.String() })
	return lk, nil
}

// batchSubmitter is SubmitterFunction with both keys' messages in its event
// (Orchestrator.RunQueuedBatch); under the hand-written mutants, handSubmitter.
func batchSubmitter(ctx context.Context, k *kit) result {
	configureBatch(k)
	var msgs []transfer.QueueMessage
	for _, b := range batchKeys {
		msgs = append(msgs, transfer.QueueMessage{StoreKey: b.key, ClaimID: b.claim})
	}
	var texts []string
	for i, ans := range k.orch.RunQueuedBatch(ctx, msgs) {
		t := batchKeys[i].name + " " + string(ans.Delivery)
		if ans.Err != nil {
			t += " (" + problem(ans.Err) + ")"
		}
		texts = append(texts, t)
	}
	return result{text: strings.Join(texts, ", ")}
}

// batchCaller is a synchronous call with A's key and request (Orchestrator.Transfer). Its answer
// names a transaction; the check asks that it holds A's operation and landed (a 200) or failed on
// A's own destination (a rejection).
func batchCaller(ctx context.Context, k *kit) result {
	configureBatch(k)
	a := batchKeys[0]
	out, err := k.orch.Transfer(ctx, a.in)
	w := k.r.w
	opOf := func(hash string, rejected bool) opAnswer {
		ans := opAnswer{key: a.key, hash: hash, index: -1, rejected: rejected}
		if e := w.envs[hash]; e != nil {
			ans.index = slices.Index(e.ops, a.key)
		}
		return ans
	}
	if err == nil {
		return result{text: "200 " + w.envName(out.TransactionHash), ops: []opAnswer{opOf(out.TransactionHash, false)}}
	}
	var rej *transfer.RejectedError
	if errors.As(err, &rej) && rej.TransactionHash != "" {
		return result{text: "422 " + w.envName(rej.TransactionHash), ops: []opAnswer{opOf(rej.TransactionHash, true)}}
	}
	return result{text: problem(err)}
}

// batchSweep is the sweep's work on each key (reconcile's sweepOne): read the item, and judge an
// in-doubt one or an expired claim with Settle.
func batchSweep(ctx context.Context, k *kit) result {
	configureBatch(k)
	w := k.r.w
	var texts []string
	for _, b := range batchKeys {
		rec, err := k.orch.Store.Get(ctx, b.key)
		if err != nil || !(rec.Status == transfer.StatusInDoubt || rec.LeaseExpired(w.now())) {
			continue
		}
		st, err := k.orch.Settle(ctx, rec)
		if err != nil {
			texts = append(texts, b.name+" "+okOr(err))
			continue
		}
		texts = append(texts, b.name+" "+string(st.Resolution))
	}
	return result{text: "sweep: " + strings.Join(texts, ", ")}
}
