package cfntemplate_test

import (
	"strconv"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/metrics"
)

// A daily run that dies without a word (killed for its memory or its time, a crash, an invocation
// Lambda gave up after its retries) writes neither the report's metric nor the failure's, and
// EventBridge counts no failed invocation: silence is not a clean day. An alarm pages when no
// report was stored for more than a day: the report's metric missing breaches, over a window
// longer than the 24 hours between two scheduled runs and shorter than two days.
func TestADailyReportMissingForADayPages(t *testing.T) {
	tpl := load(t)
	var found []string
	for id, r := range tpl.Resources {
		p := r.Properties
		if r.Type != "AWS::CloudWatch::Alarm" || p["Namespace"] != metrics.Namespace || p["MetricName"] != metrics.DailyDiscrepancies ||
			p["Statistic"] != "SampleCount" {
			continue
		}
		found = append(found, id)
		period, _ := strconv.Atoi(str(t, p, "Period"))
		n, _ := strconv.Atoi(str(t, p, "EvaluationPeriods"))
		m, _ := strconv.Atoi(str(t, p, "DatapointsToAlarm"))
		window := period * n
		if p["TreatMissingData"] != "breaching" || p["ComparisonOperator"] != "LessThanThreshold" || str(t, p, "Threshold") != "1" ||
			window <= 24*3600 || window >= 48*3600 || m != n || period < 3600 {
			t.Errorf("%s: %v", id, p)
		}
		if _, ok := p["Dimensions"]; ok {
			t.Errorf("%s has dimensions; the report's metric is written without any", id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("alarms on a missing daily report: %v", found)
	}
}
