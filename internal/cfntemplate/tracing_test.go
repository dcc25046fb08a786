package cfntemplate_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
)

// The Tracing parameter is TRACING on every function: its values are tracing's modes, X-Ray the
// default; with otel every role may put spans to X-Ray's OTLP endpoint, and only then.
func TestTracingParameter(t *testing.T) {
	tpl := load(t)
	p := tpl.Parameters["Tracing"]
	want := []any{string(tracing.XRay), string(tracing.OTel), string(tracing.Off)}
	if p["Default"] != string(tracing.XRay) || !reflect.DeepEqual(p["AllowedValues"], want) {
		t.Errorf("Tracing parameter: default %v, allowed %v; want xray and %v", p["Default"], p["AllowedValues"], want)
	}
	if got := get(t, tpl.Globals["Function"], "Environment", "Variables", tracing.EnvMode); !reflect.DeepEqual(got, map[string]any{"Ref": "Tracing"}) {
		t.Errorf("Globals TRACING = %v", got)
	}
	if !reflect.DeepEqual(tpl.Conditions["UseOtelTracing"], map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "Tracing"}, "otel"}}) {
		t.Errorf("UseOtelTracing = %v", tpl.Conditions["UseOtelTracing"])
	}
	for id, r := range tpl.Resources {
		if r.Type != "AWS::IAM::Role" || !strings.HasSuffix(id, "FunctionRole") {
			continue
		}
		found := false
		for _, pol := range get(t, r.Properties, "Policies").([]any) {
			for _, st := range get(t, pol, "PolicyDocument", "Statement").([]any) {
				branches, ok := cfntemplate.Lookup(st, "Fn::If")
				if !ok || branches.([]any)[0] != "UseOtelTracing" {
					continue
				}
				found = true
				if a := get(t, branches.([]any)[1], "Action"); !reflect.DeepEqual(a, []any{"xray:PutSpans", "xray:PutSpansForIndexing"}) {
					t.Errorf("%s OtlpTraces actions %v", id, a)
				}
			}
		}
		if !found {
			t.Errorf("%s cannot put spans with Tracing=otel", id)
		}
	}
}
