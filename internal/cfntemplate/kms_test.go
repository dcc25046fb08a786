package cfntemplate_test

import (
	"reflect"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
)

// rawStatements are a role's policy statements as written, each with its Fn::If condition ("" when
// unconditional) and the statement of the true branch.
func rawStatements(t *testing.T, tpl *cfntemplate.Template, role string) map[string]struct {
	cond string
	st   any
} {
	t.Helper()
	out := map[string]struct {
		cond string
		st   any
	}{}
	for _, pol := range get(t, tpl.Resources[role].Properties, "Policies").([]any) {
		for _, st := range get(t, pol, "PolicyDocument", "Statement").([]any) {
			cond := ""
			if branches, ok := cfntemplate.Lookup(st, "Fn::If"); ok {
				cond, st = branches.([]any)[0].(string), branches.([]any)[1]
			}
			sid, _ := cfntemplate.Lookup(st, "Sid")
			out[sid.(string)] = struct {
				cond string
				st   any
			}{cond, st}
		}
	}
	return out
}

// Signer kms (keys that never leave KMS): ApiFunction may kms:Sign with exactly the vault's and the fee account's
// keys (pure Ed25519, RAW), read their public keys, and reads the secret only when one is given;
// ReconcileFunction signs only with the fee account's key (channel creation); the alert function
// has no KMS permission. Every function that loads the configuration gets SIGNER and the key ARNs.
func TestKMSSignerPermissionsNameTheKeys(t *testing.T) {
	tpl := load(t)
	ref := func(name string) any { return map[string]any{"Ref": name} }
	keys := map[string]any{"Fn::If": []any{"UseKmsFeeKey", []any{ref("VaultKmsKeyArn"), ref("FeeKmsKeyArn")}, []any{ref("VaultKmsKeyArn")}}}
	algo := map[string]any{"StringEquals": map[string]any{"kms:SigningAlgorithm": "ED25519_SHA_512", "kms:MessageType": "RAW"}}

	api := rawStatements(t, tpl, "ApiFunctionRole")
	if s := api["SigningKeys"]; s.cond != "UseKms" || get(t, s.st, "Action") != "kms:Sign" ||
		!reflect.DeepEqual(get(t, s.st, "Resource"), keys) || !reflect.DeepEqual(get(t, s.st, "Condition"), algo) {
		t.Errorf("ApiFunctionRole SigningKeys = %+v", s)
	}
	if s := api["SigningPublicKeys"]; s.cond != "UseKms" || get(t, s.st, "Action") != "kms:GetPublicKey" || !reflect.DeepEqual(get(t, s.st, "Resource"), keys) {
		t.Errorf("ApiFunctionRole SigningPublicKeys = %+v", s)
	}
	if s := api["SigningSecret"]; s.cond != "HasSigningSecret" {
		t.Errorf("ApiFunctionRole reads the secret under %q, want HasSigningSecret (optional with Signer kms)", s.cond)
	}

	rec := rawStatements(t, tpl, "ReconcileFunctionRole")
	if s := rec["FeeSigningKey"]; s.cond != "UseKmsWithChannels" || get(t, s.st, "Action") != "kms:Sign" ||
		!reflect.DeepEqual(get(t, s.st, "Resource"), ref("FeeKmsKeyArn")) || !reflect.DeepEqual(get(t, s.st, "Condition"), algo) {
		t.Errorf("ReconcileFunctionRole FeeSigningKey = %+v", s)
	}
	for _, role := range []string{"ApiFunctionRole", "ReconcileFunctionRole", "AlertFunctionRole"} {
		for _, st := range statements(t, tpl, role) {
			for _, a := range st.actions {
				if a == "kms:Sign" && st.sid != "SigningKeys" && st.sid != "FeeSigningKey" {
					t.Errorf("%s statement %s may kms:Sign", role, st.sid)
				}
			}
		}
	}
	for _, id := range []string{"ApiFunction", "ReconcileFunction"} {
		vars := get(t, tpl.Resources[id].Properties, "Environment", "Variables").(map[string]any)
		for k, p := range map[string]string{"SIGNER": "Signer", "VAULT_KMS_KEY_ID": "VaultKmsKeyArn", "FEE_KMS_KEY_ID": "FeeKmsKeyArn"} {
			if !reflect.DeepEqual(vars[k], ref(p)) {
				t.Errorf("%s %s = %v, want !Ref %s", id, k, vars[k], p)
			}
		}
	}
	if d, _ := cfntemplate.String(tpl.Parameters["Signer"]["Default"]); d != "secrets" {
		t.Errorf("Signer defaults to %q, want secrets", d)
	}
}
