package wiring

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

type ctxKey string

type recordingObserver struct {
	name   string
	events *[]string
}

func (o recordingObserver) StartStep(ctx context.Context, step string) (context.Context, func(error)) {
	*o.events = append(*o.events, o.name+" start "+step)
	ctx = context.WithValue(ctx, ctxKey(o.name), true)
	return ctx, func(err error) { *o.events = append(*o.events, o.name+" end "+err.Error()) }
}

func (o recordingObserver) Finished(_ context.Context, r transfer.Report) {
	*o.events = append(*o.events, o.name+" finished "+r.Outcome)
}

func TestObserversComposeInOrder(t *testing.T) {
	var events []string
	m := Observers{recordingObserver{"a", &events}, nil, recordingObserver{"b", &events}}
	ctx, end := m.StartStep(context.Background(), "send")
	if ctx.Value(ctxKey("a")) == nil || ctx.Value(ctxKey("b")) == nil {
		t.Fatal("the context does not carry both observers' values")
	}
	end(errors.New("x"))
	m.Finished(ctx, transfer.Report{Outcome: "success"})
	want := []string{"a start send", "b start send", "b end x", "a end x", "a finished success", "b finished success"}
	if !slices.Equal(events, want) {
		t.Fatalf("events %v, want %v", events, want)
	}
}
