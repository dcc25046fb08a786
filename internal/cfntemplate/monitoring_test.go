package cfntemplate_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// awsMetric is what AWS publishes in one namespace: the metric names the template may use and
// their dimension names. From the AWS documentation: Lambda ("Types of metrics for Lambda
// functions"), API Gateway HTTP APIs ("Monitor CloudWatch metrics for HTTP APIs"), DynamoDB
// ("DynamoDB Metrics and dimensions"), SQS ("Available CloudWatch metrics for Amazon SQS") and
// EventBridge ("Monitoring Amazon EventBridge": rule metrics).
type awsMetric struct{ names, dims []string }

var awsNamespaces = map[string]awsMetric{
	"AWS/Lambda": {[]string{"Invocations", "Errors", "Throttles", "Duration", "ConcurrentExecutions", "IteratorAge"},
		[]string{"FunctionName"}},
	"AWS/ApiGateway": {[]string{"Count", "4xx", "5xx", "Latency", "IntegrationLatency", "DataProcessed"},
		[]string{"ApiId", "Stage"}},
	"AWS/DynamoDB": {[]string{"WriteThrottleEvents", "ReadThrottleEvents", "ThrottledRequests", "ConsumedWriteCapacityUnits", "ConsumedReadCapacityUnits"},
		[]string{"TableName", "GlobalSecondaryIndexName", "Operation"}},
	"AWS/SQS":    {[]string{"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"}, []string{"QueueName"}},
	"AWS/Events": {[]string{"FailedInvocations", "Invocations", "TriggeredRules"}, []string{"RuleName"}},
}

// metricRef is one metric an alarm or a widget reads: its namespace, name and dimensions (the
// names; the values as written, a Ref or a "${...}").
type metricRef struct {
	where      string
	namespace  string
	name       string
	dims       []string
	dimValues  map[string]any
	expression bool // from a SEARCH or Metrics Insights expression: dims are the schema's
}

var (
	searchRE  = regexp.MustCompile(`SEARCH\('\{([^}]*)\}\s+MetricName="([^"]+)"`)
	insightRE = regexp.MustCompile(`(?s)SELECT\s+\w+\((\w+)\)\s+FROM\s+SCHEMA\(([^)]*)\)`)
)

// expressionRefs reads the metrics an expression names: SEARCH('{ns,dim,...} MetricName="x"')
// and Metrics Insights' SELECT f(x) FROM SCHEMA(ns, dim, ...). Metric math over ids names none.
func expressionRefs(where, expr string) []metricRef {
	var out []metricRef
	for _, m := range searchRE.FindAllStringSubmatch(expr, -1) {
		parts := strings.Split(m[1], ",")
		out = append(out, metricRef{where: where, namespace: strings.Trim(parts[0], `"`), name: m[2], dims: parts[1:], expression: true})
	}
	for _, m := range insightRE.FindAllStringSubmatch(expr, -1) {
		parts := strings.Split(m[2], ",")
		for i := range parts {
			parts[i] = strings.Trim(strings.TrimSpace(parts[i]), `"`)
		}
		out = append(out, metricRef{where: where, namespace: parts[0], name: m[1], dims: parts[1:], expression: true})
	}
	return out
}

// alarmRefs are the metrics of every alarm, keyed by the alarm's logical ID.
func alarmRefs(t *testing.T, tpl *cfntemplate.Template) map[string][]metricRef {
	t.Helper()
	out := map[string][]metricRef{}
	dimsOf := func(v any) ([]string, map[string]any) {
		var names []string
		values := map[string]any{}
		list, _ := v.([]any)
		for _, d := range list {
			n := str(t, d, "Name")
			names = append(names, n)
			values[n] = get(t, d, "Value")
		}
		return names, values
	}
	for _, id := range tpl.ResourcesOfType("AWS::CloudWatch::Alarm") {
		p := tpl.Resources[id].Properties
		if ns, ok := p["Namespace"]; ok {
			names, values := dimsOf(p["Dimensions"])
			out[id] = append(out[id], metricRef{where: id, namespace: fmt.Sprint(ns), name: str(t, p, "MetricName"), dims: names, dimValues: values})
			continue
		}
		list, ok := p["Metrics"].([]any)
		if !ok || len(list) == 0 {
			t.Errorf("%s names no metric", id)
			continue
		}
		ids := map[string]bool{}
		for _, q := range list {
			ids[str(t, q, "Id")] = true
		}
		for _, q := range list {
			if m, ok := cfntemplate.Lookup(q, "MetricStat", "Metric"); ok {
				names, values := dimsOf(get(t, m, "Dimensions"))
				out[id] = append(out[id], metricRef{where: id, namespace: str(t, m, "Namespace"), name: str(t, m, "MetricName"), dims: names, dimValues: values})
				continue
			}
			expr := str(t, q, "Expression")
			refs := expressionRefs(id, expr)
			if len(refs) == 0 {
				// Metric math: every lower-case identifier it uses is an id of this alarm.
				for _, w := range regexp.MustCompile(`\b[a-z][a-z0-9_]*\b`).FindAllString(expr, -1) {
					if !ids[w] {
						t.Errorf("%s: expression %q uses %q, not an id of the alarm", id, expr, w)
					}
				}
			}
			out[id] = append(out[id], refs...)
		}
	}
	return out
}

// dashboardRefs are the metrics of every widget of the Dashboard's body (a Fn::Sub of JSON).
func dashboardRefs(t *testing.T, tpl *cfntemplate.Template) []metricRef {
	t.Helper()
	body := get(t, tpl.Resources["Dashboard"].Properties, "DashboardBody", "Fn::Sub")
	text, ok := body.(string)
	if !ok {
		t.Fatalf("DashboardBody's Fn::Sub is %T, want the JSON string alone", body)
	}
	var doc struct {
		Widgets []struct {
			Type       string
			Properties struct {
				Title   string
				Region  string
				Metrics [][]any
			}
		}
	}
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatalf("DashboardBody is not JSON: %v", err)
	}
	if len(doc.Widgets) == 0 {
		t.Fatal("the dashboard has no widget")
	}
	var out []metricRef
	for _, w := range doc.Widgets {
		where := "dashboard widget " + w.Properties.Title
		if w.Type != "metric" || w.Properties.Region != "${AWS::Region}" || len(w.Properties.Metrics) == 0 {
			t.Errorf("%s: type %s, region %s, %d metrics", where, w.Type, w.Properties.Region, len(w.Properties.Metrics))
		}
		for _, m := range w.Properties.Metrics {
			if len(m) > 0 {
				if opts, ok := m[0].(map[string]any); ok {
					expr, _ := opts["expression"].(string)
					refs := expressionRefs(where, expr)
					if len(refs) == 0 {
						t.Errorf("%s: expression %q names no metric", where, expr)
					}
					out = append(out, refs...)
					continue
				}
			}
			var s []string
			for _, v := range m {
				if v, ok := v.(string); ok {
					s = append(s, v)
				}
			}
			// [namespace, name, dim, value, ..., {options}]: no "..." shorthand, so each line
			// stands on its own.
			if len(s) < 2 || len(s)%2 != 0 || slices.Contains(s, "...") {
				t.Errorf("%s: metric %v is not [namespace, name, dimension, value, ...]", where, m)
				continue
			}
			r := metricRef{where: where, namespace: s[0], name: s[1], dimValues: map[string]any{}}
			for i := 2; i < len(s); i += 2 {
				r.dims = append(r.dims, s[i])
				r.dimValues[s[i]] = s[i+1]
			}
			out = append(out, r)
		}
	}
	return out
}

// checkRef holds one metric to what exists: the service's metrics with the exact dimension set
// the code writes them with (else the alarm or line sees no data), AWS's in a real namespace
// with real names and dimensions whose values name this stack's resources.
func checkRef(tpl *cfntemplate.Template, r metricRef) (problems []string) {
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if r.namespace == metrics.Namespace {
		want, ok := metrics.Dimensions[r.name]
		got := slices.Clone(r.dims)
		sort.Strings(got)
		want = slices.Clone(want)
		sort.Strings(want)
		if !ok {
			errorf("%s: %s is not a metric the code writes (internal/metrics)", r.where, r.name)
		} else if !slices.Equal(got, want) {
			errorf("%s: %s with dimensions %v; the code writes it with %v", r.where, r.name, r.dims, want)
		}
		return problems
	}
	ns, ok := awsNamespaces[r.namespace]
	if !ok {
		errorf("%s: namespace %q is neither %s nor a known AWS namespace", r.where, r.namespace, metrics.Namespace)
		return problems
	}
	if !slices.Contains(ns.names, r.name) {
		errorf("%s: %s has no metric %q", r.where, r.namespace, r.name)
	}
	for _, d := range r.dims {
		if !slices.Contains(ns.dims, d) {
			errorf("%s: %s %s has no dimension %q", r.where, r.namespace, r.name, d)
		}
		target := ""
		switch v := r.dimValues[d].(type) {
		case map[string]any:
			target, _ = v["Ref"].(string)
		case string:
			if s, ok := strings.CutPrefix(v, "${"); ok {
				target = strings.TrimSuffix(s, "}")
			} else if d == "GlobalSecondaryIndexName" && v != dynamo.InDoubtIndex && v != dynamo.WalletIndex {
				errorf("%s: index %q is not the table's (%s, %s)", r.where, v, dynamo.InDoubtIndex, dynamo.WalletIndex)
			}
		}
		if target == "" {
			continue
		}
		// A resource of the template, or the EventBridge rule SAM generates for the sweep's
		// Schedule event (<function logical ID><event name>).
		_, isResource := tpl.Resources[target]
		_, isSweep := cfntemplate.Lookup(tpl.Resources["ReconcileFunction"].Properties, "Events", strings.TrimPrefix(target, "ReconcileFunction"))
		if !isResource && !(strings.HasPrefix(target, "ReconcileFunction") && isSweep) {
			errorf("%s: dimension %s names %q, not a resource of the template", r.where, d, target)
		}
	}
	return problems
}

// Every alarm's metric is one the code writes (with its dimensions) or a real AWS metric; every
// alarm notifies AlertTopic; the alarms on what the schedule writes every minute breach when the
// data stops; every alarm an operator relies on is there.
func TestAlarmsNameMetricsThatExist(t *testing.T) {
	tpl := load(t)
	refs := alarmRefs(t, tpl)
	for id, rs := range refs {
		for _, r := range rs {
			for _, p := range checkRef(tpl, r) {
				t.Error(p)
			}
		}
		p := tpl.Resources[id].Properties
		if !reflect.DeepEqual(p["AlarmActions"], []any{map[string]any{"Ref": "AlertTopic"}}) {
			t.Errorf("%s does not notify AlertTopic", id)
		}
		scheduled := slices.ContainsFunc(rs, func(r metricRef) bool {
			return r.namespace == metrics.Namespace && (r.name == metrics.InDoubt || r.name == metrics.Balance)
		})
		if scheduled && p["TreatMissingData"] != "breaching" {
			t.Errorf("%s reads a gauge the sweep writes every minute: its missing data must breach, not %v", id, p["TreatMissingData"])
		}
	}
	// The alarms an operator relies on: what each alarm watches.
	watched := map[string]bool{}
	for _, rs := range refs {
		for _, r := range rs {
			key := r.namespace + " " + r.name
			if v, ok := r.dimValues["FunctionName"].(map[string]any); ok {
				key += " " + fmt.Sprint(v["Ref"])
			}
			if slices.Contains(r.dims, "GlobalSecondaryIndexName") {
				key += " gsi1"
			}
			watched[key] = true
		}
	}
	for _, want := range []string{
		"AWS/Lambda Errors ApiFunction", "AWS/Lambda Throttles ApiFunction", "AWS/Lambda Duration ApiFunction",
		"AWS/ApiGateway 5xx", "AWS/ApiGateway Latency", "AWS/DynamoDB WriteThrottleEvents",
		"AWS/DynamoDB WriteThrottleEvents gsi1", "AWS/Lambda IteratorAge AlertFunction", "AWS/Events FailedInvocations",
		"AWS/Lambda Errors ReconcileFunction", "AWS/Lambda Errors AlertFunction",
		metrics.Namespace + " " + metrics.InDoubt, metrics.Namespace + " " + metrics.Balance,
	} {
		if !watched[want] {
			t.Errorf("no alarm watches %s", want)
		}
	}
}

// Every widget's metric exists as the alarms' do, and the dashboard shows what an operator on call reads first:
// transfers by outcome, latency, the in-doubt gauge, failures by code, channel leases, balances,
// DynamoDB throttles, Lambda errors, throttles and concurrency.
func TestDashboardNamesMetricsThatExist(t *testing.T) {
	tpl := load(t)
	shown := map[string]bool{}
	for _, r := range dashboardRefs(t, tpl) {
		for _, p := range checkRef(tpl, r) {
			t.Error(p)
		}
		shown[r.namespace+" "+r.name] = true
	}
	for _, want := range []string{
		metrics.Namespace + " " + metrics.Total, metrics.Namespace + " " + metrics.DurationMS,
		metrics.Namespace + " " + metrics.InDoubt, metrics.Namespace + " " + metrics.FailureTotal,
		metrics.Namespace + " " + metrics.ChannelLeasesInUse, metrics.Namespace + " " + metrics.Balance,
		"AWS/DynamoDB WriteThrottleEvents", "AWS/Lambda Errors", "AWS/Lambda Throttles", "AWS/Lambda ConcurrentExecutions",
	} {
		if !shown[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
}

// The checks above catch what they claim: a made-up metric, a wrong dimension set, an unknown
// namespace and a dimension naming no resource each fail.
func TestMetricChecksCanFail(t *testing.T) {
	tpl := load(t)
	for _, r := range []metricRef{
		{namespace: metrics.Namespace, name: "transfer_orchestration_made_up"},
		{namespace: metrics.Namespace, name: metrics.InDoubt, dims: []string{"operation"}},
		{namespace: "AWS/Lambada", name: "Errors"},
		{namespace: "AWS/Lambda", name: "Errors", dims: []string{"FunctionName"}, dimValues: map[string]any{"FunctionName": "${NoSuchFunction}"}},
		{namespace: "AWS/DynamoDB", name: "WriteThrottleEvents", dims: []string{"GlobalSecondaryIndexName"}, dimValues: map[string]any{"GlobalSecondaryIndexName": "gsi9"}},
	} {
		if len(checkRef(tpl, r)) == 0 {
			t.Errorf("%+v passed the check", r)
		}
	}
	if got := expressionRefs("x", `SELECT MIN(transfer_orchestration_balance) FROM SCHEMA(TransferOrchestration, account, asset) WHERE account = 'vault'`); len(got) != 1 ||
		got[0].name != metrics.Balance || !slices.Equal(got[0].dims, []string{"account", "asset"}) {
		t.Errorf("Metrics Insights query read as %+v", got)
	}
}

// FEE_ABOVE_CAP pages: an alarm notifying AlertTopic sums the failure counter (with the exact
// dimension set the code writes it with) over the transfers answered with that code.
func TestFeeAboveCapPages(t *testing.T) {
	tpl := load(t)
	where := regexp.MustCompile(`WHERE\s+code\s*=\s*'` + transfer.CodeFeeAboveCap + `'`)
	found := false
	for id, rs := range alarmRefs(t, tpl) {
		for _, r := range rs {
			if r.namespace != metrics.Namespace || r.name != metrics.FailureTotal {
				continue
			}
			for _, p := range checkRef(tpl, r) {
				t.Error(p)
			}
			list, _ := tpl.Resources[id].Properties["Metrics"].([]any)
			for _, q := range list {
				if expr, ok := get(t, q, "Expression").(string); ok && where.MatchString(expr) {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("no alarm counts %s answered %s", metrics.FailureTotal, transfer.CodeFeeAboveCap)
	}
}
