package cfntemplate_test

import (
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
)

// env returns a function's environment as the function sees it, each parameter replaced by its
// sample value or, where it has none, by its default, and each !FindInMap resolved with them.
func env(t *testing.T, tpl *cfntemplate.Template, id string, sample map[string]string) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(vars any) {
		for k, v := range vars.(map[string]any) {
			if s, ok := cfntemplate.String(v); ok {
				out[k] = s
				continue
			}
			if s, ok := inMap(t, tpl, v, sample); ok {
				out[k] = s
				continue
			}
			ref, ok := cfntemplate.Lookup(v, "Ref")
			if !ok {
				out[k] = "<" + k + " from " + id + ">" // a resource attribute, known at deploy time
				continue
			}
			name := ref.(string)
			if p, ok := tpl.Parameters[name]; ok {
				if s, ok := sample[name]; ok {
					out[k] = s
				} else if d, ok := cfntemplate.String(p["Default"]); ok {
					out[k] = d // possibly "", e.g. VaultContract: the classic vault
				} else {
					t.Fatalf("parameter %s has no default and no sample", name)
				}
				continue
			}
			if _, ok := tpl.Resources[name]; !ok {
				t.Fatalf("%s: %s refers to %s, neither parameter nor resource", id, k, name)
			}
			out[k] = "<" + name + ">"
		}
	}
	add(get(t, map[string]any(tpl.Globals["Function"]), "Environment", "Variables"))
	add(get(t, tpl.Resources[id].Properties, "Environment", "Variables"))
	return out
}

var sample = map[string]string{
	"VaultAccount":     "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7",
	"Assets":           "USDC:GBBD47IF6LWK7P7MDEVSCWR7DPUWV3NY3DTQEVFL4NAT4AQH3ZLLFLA5",
	"SigningSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:transfers/signing-AbCdEf",
}

// inMap resolves v when it is a !FindInMap whose keys are strings, parameters (their sample value
// or default, as env takes them) or !FindInMap themselves; ok is false for anything else.
func inMap(t *testing.T, tpl *cfntemplate.Template, v any, sample map[string]string) (string, bool) {
	t.Helper()
	args, ok := cfntemplate.Lookup(v, "Fn::FindInMap")
	list, _ := args.([]any)
	if !ok || len(list) != 3 {
		return "", false
	}
	keys := make([]string, 3)
	for i, a := range list {
		if s, ok := cfntemplate.String(a); ok {
			keys[i] = s
			continue
		}
		if s, ok := inMap(t, tpl, a, sample); ok {
			keys[i] = s
			continue
		}
		ref, _ := cfntemplate.Lookup(a, "Ref")
		name, _ := ref.(string)
		p, isParam := tpl.Parameters[name]
		if !isParam {
			t.Fatalf("!FindInMap %v: key %v is neither a string, a parameter nor a !FindInMap", list, a)
		}
		if s, ok := sample[name]; ok {
			keys[i] = s
		} else if d, ok := cfntemplate.String(p["Default"]); ok {
			keys[i] = d
		} else {
			t.Fatalf("parameter %s has no default and no sample", name)
		}
	}
	got, ok := tpl.Mappings[keys[0]][keys[1]][keys[2]]
	s, isScalar := cfntemplate.String(got)
	if !ok || !isScalar {
		t.Fatalf("!FindInMap %v: no scalar at %v", list, keys)
	}
	return s, true
}
