package cfntemplate_test

import (
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
)

// The async path (README.md, "Asynchronous transfers"): the queue and its dead-letter queue with
// an alarm, SubmitterFunction on the queue with partial batch responses and at most as many
// transfers in flight as channels, and SQS permissions exactly where they are used.
func TestAsyncTransfers(t *testing.T) {
	tpl := load(t)
	q := tpl.Resources["TransferQueue"].Properties
	visibility, _ := strconv.Atoi(str(t, q, "VisibilityTimeout"))
	timeout, _ := strconv.Atoi(str(t, tpl.Resources["SubmitterFunction"].Properties, "Timeout"))
	if visibility < 6*timeout {
		t.Errorf("TransferQueue VisibilityTimeout %d s, want at least 6x SubmitterFunction's %d s", visibility, timeout)
	}
	if !reflect.DeepEqual(get(t, q, "RedrivePolicy", "deadLetterTargetArn"), map[string]any{"Fn::GetAtt": []any{"TransferDeadLetterQueue", "Arn"}}) {
		t.Errorf("TransferQueue redrives to %v", get(t, q, "RedrivePolicy", "deadLetterTargetArn"))
	}
	// Enough receives for the submitter's backoff (queue.Backoff) to give a message failing every
	// ledger about 25 minutes before the dead-letter queue, not so many that a dead invocation's
	// message (360 s each) waits hours.
	if n, _ := strconv.Atoi(str(t, q, "RedrivePolicy", "maxReceiveCount")); n < 8 || n > 12 {
		t.Errorf("maxReceiveCount = %d, want 8 to 12", n)
	}
	alarm := tpl.Resources["TransferDeadLetterQueueAlarm"].Properties
	if str(t, alarm, "MetricName") != "ApproximateNumberOfMessagesVisible" || str(t, alarm, "Threshold") != "0" ||
		!reflect.DeepEqual(get(t, alarm, "Dimensions"), []any{map[string]any{"Name": "QueueName", "Value": map[string]any{"Fn::GetAtt": []any{"TransferDeadLetterQueue", "QueueName"}}}}) {
		t.Errorf("dead-letter alarm = %v", alarm)
	}

	ev := get(t, tpl.Resources["SubmitterFunction"].Properties, "Events", "Transfers")
	p := get(t, ev, "Properties")
	if str(t, ev, "Type") != "SQS" || !reflect.DeepEqual(get(t, p, "Queue"), map[string]any{"Fn::GetAtt": []any{"TransferQueue", "Arn"}}) ||
		!reflect.DeepEqual(get(t, p, "FunctionResponseTypes"), []any{"ReportBatchItemFailures"}) {
		t.Errorf("SubmitterFunction's event = %v", ev)
	}
	// The batching window: whole seconds from 1 to a ledger interval (5 s). 0 gives steady traffic
	// batches of about one, each invocation lasting about a ledger, so an async transfer costs
	// what a synchronous one does; more than a ledger keeps a client who asked for async waiting
	// longer than a ledger for nothing it gains (internal/loadtest's BenchmarkAsyncRate).
	window, err := strconv.Atoi(str(t, p, "MaximumBatchingWindowInSeconds"))
	if err != nil || window < 1 || window > 5 {
		t.Errorf("MaximumBatchingWindowInSeconds = %q, want whole seconds from 1 to 5", str(t, p, "MaximumBatchingWindowInSeconds"))
	}
	// Every allowed ChannelCount has a row; batch x concurrency is exactly the channels (at least
	// 2: SQS's least MaximumConcurrency with a batch of 1): more would wait for channels, fewer
	// leave channels idle under a backlog (internal/loadtest's BenchmarkAsync).
	rows := tpl.Mappings["Submitter"]
	for _, c := range tpl.Parameters["ChannelCount"]["AllowedValues"].([]any) {
		count, _ := cfntemplate.String(c)
		row, ok := rows[count]
		if !ok {
			t.Errorf("Submitter mapping has no row for ChannelCount %s", count)
			continue
		}
		n, _ := strconv.Atoi(count)
		batch, _ := strconv.Atoi(str(t, row, "BatchSize"))
		conc, _ := strconv.Atoi(str(t, row, "MaxConcurrency"))
		if batch < 1 || batch > 10 || conc < 2 || batch*conc != max(n, 2) {
			t.Errorf("ChannelCount %d: BatchSize %d x MaxConcurrency %d", n, batch, conc)
		}
	}

	// SQS permissions: the API and the sweep send, only to the queue; the submitter receives,
	// deletes and changes a message's visibility (its backoff), only on it.
	want := map[string][]string{
		"ApiFunctionRole":           {"sqs:SendMessage"},
		"ReconcileFunctionRole":     {"sqs:SendMessage"},
		"SubmitterFunctionRole":     {"sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"},
		"AlertFunctionRole":         {"sqs:SendMessage"}, // its stream mapping's on-failure queue
		"InDoubtReaderFunctionRole": nil,
	}
	for role, actions := range want {
		var got []string
		for _, st := range statements(t, tpl, role) {
			for _, a := range st.actions {
				if !strings.HasPrefix(a, "sqs:") {
					continue
				}
				got = append(got, a)
				queue := `{"Fn::GetAtt":["TransferQueue","Arn"]}`
				if role == "AlertFunctionRole" {
					queue = `{"Fn::GetAtt":["AlertFailureQueue","Arn"]}`
				}
				if st.resource != queue {
					t.Errorf("%s: %s on %s, want %s", role, a, st.resource, queue)
				}
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, actions) {
			t.Errorf("%s SQS actions = %v, want %v", role, got, actions)
		}
	}
	for _, id := range []string{"ApiFunction", "ReconcileFunction", "SubmitterFunction"} {
		if e := env(t, tpl, id, sample); e["QUEUE_URL"] != "<TransferQueue>" {
			t.Errorf("%s QUEUE_URL = %q", id, e["QUEUE_URL"])
		}
	}
	if v, ok := env(t, tpl, "InDoubtReaderFunction", sample)["QUEUE_URL"]; ok {
		t.Errorf("InDoubtReaderFunction has QUEUE_URL=%s but never sends", v)
	}
	// The submitter signs as the API does: the same signing statements.
	sid := func(role string) string {
		var out []string
		for _, st := range statements(t, tpl, role) {
			if strings.HasPrefix(st.sid, "Signing") {
				out = append(out, st.sid+" "+strings.Join(st.actions, ",")+" on "+st.resource)
			}
		}
		return strings.Join(out, "\n")
	}
	if a, s := sid("ApiFunctionRole"), sid("SubmitterFunctionRole"); a != s || a == "" {
		t.Errorf("SubmitterFunctionRole's signing statements differ from ApiFunctionRole's:\n%s\nvs\n%s", s, a)
	}
}
