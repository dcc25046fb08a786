package wiring_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

type putEvents struct {
	in     []*eventbridge.PutEventsInput
	refuse bool
}

func (p *putEvents) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	p.in = append(p.in, in)
	if p.refuse {
		return &eventbridge.PutEventsOutput{FailedEntryCount: 1, Entries: []ebtypes.PutEventsResultEntry{{ErrorCode: aws.String("ThrottlingException")}}}, nil
	}
	return &eventbridge.PutEventsOutput{Entries: []ebtypes.PutEventsResultEntry{{EventId: aws.String("e-1")}}}, nil
}

// The daily reconciliation's event: one entry on the bus, the service's source, its detail-type,
// the summary as detail and the report's time; an entry PutEvents refuses is an error.
func TestDailyPublisherSendsOneEvent(t *testing.T) {
	at := time.Date(2026, 3, 1, 0, 15, 0, 0, time.UTC)
	sum := reconcile.DailySummary{Day: "2026-02-28", Discrepancies: 2, Matched: 3, GeneratedAt: at}
	p := &putEvents{}
	if err := wiring.DailyPublisher(p, "stellar-transfers")(context.Background(), sum); err != nil {
		t.Fatal(err)
	}
	if len(p.in) != 1 || len(p.in[0].Entries) != 1 {
		t.Fatalf("requests %+v", p.in)
	}
	e := p.in[0].Entries[0]
	var detail reconcile.DailySummary
	if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &detail); err != nil {
		t.Fatal(err)
	}
	if aws.ToString(e.EventBusName) != "stellar-transfers" || aws.ToString(e.Source) != alert.EventSource ||
		aws.ToString(e.DetailType) != reconcile.DailyDetailType || !aws.ToTime(e.Time).Equal(at) ||
		detail.Day != "2026-02-28" || detail.Discrepancies != 2 || detail.Matched != 3 || detail.OK {
		t.Fatalf("entry %+v detail %+v", e, detail)
	}
	p.refuse = true
	if err := wiring.DailyPublisher(p, "stellar-transfers")(context.Background(), sum); err == nil {
		t.Fatal("a refused entry is not an error")
	}
}
