package chaos

import (
	"strings"
	"testing"
)

// TestChannelCalendarMeetsEveryWriteFault runs a campaign over channel accounts with faultyDynamo
// answering UpdateItem, so that every lease is scheduled on the channel calendar (the deployed
// wiring's path) while its bookings are refused, throttled and have their answers lost both ways
// (an error, or the SDK's retry booking a second slot). The calendar only schedules attempts: no
// transfer may be paid twice, lost or answered falsely whatever its bookings met.
//
// 240 keys: a call the calendar has no slot for is answered before its claim, so bookings are
// fewer per key than the calls; at 60 keys a run met 2 or 3 lost answers, split evenly between
// the two kinds, and one run in three met no retried one. At 240 each kind comes 7 to 12 times.
func TestChannelCalendarMeetsEveryWriteFault(t *testing.T) {
	cfg := Config{Seed: 11, Keys: 240, Callers: 4, Wave: 6, FaultRate: 0.2, SendFaultRate: 0.3, CrashRate: 0.03,
		Backend: "rpc", Channels: 4}
	rep, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Violations {
		t.Error(v)
	}
	for _, kind := range []string{"_error", "_throttled", "_answer_lost", "_answer_lost_retried"} {
		if rep.Faults["dynamo_ticket_update"+kind] == 0 {
			t.Errorf("fault dynamo_ticket_update%s never happened: the calendar was not reached (faults %v)", kind, ticketFaults(rep.Faults))
		}
	}
	if rep.Answers["ok"] == 0 {
		t.Errorf("no call succeeded: answers %v", rep.Answers)
	}
	t.Logf("answers %v, ticket faults %v, applied %d, virtual %v, real %v", rep.Answers, ticketFaults(rep.Faults), rep.Applied, rep.VirtualTime, rep.RealTime)
}

func ticketFaults(m map[string]int) map[string]int {
	out := map[string]int{}
	for k, v := range m {
		if strings.Contains(k, "ticket") {
			out[k] = v
		}
	}
	return out
}
