package cfntemplate_test

import (
	"strconv"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The deployed key length is bounded as the configuration bounds it: IdempotencyKeyMaxLength's
// MinValue and MaxValue are transfer.MinKeyLength and transfer.MaxKeyLengthBound (the longest key
// DynamoDB's index sort keys hold), its default is the code's, and ApiFunction, which validates
// keys, reads it.
func TestIdempotencyKeyMaxLengthIsBoundedByTheIndexKeys(t *testing.T) {
	tpl := load(t)
	p, ok := tpl.Parameters["IdempotencyKeyMaxLength"]
	if !ok {
		t.Fatal("no IdempotencyKeyMaxLength parameter")
	}
	for k, want := range map[string]int{"MinValue": transfer.MinKeyLength, "MaxValue": transfer.MaxKeyLengthBound, "Default": transfer.DefaultMaxKeyLength} {
		v, _ := cfntemplate.String(p[k])
		if got, err := strconv.Atoi(v); err != nil || got != want {
			t.Errorf("IdempotencyKeyMaxLength %s = %q, want %d", k, v, want)
		}
	}
	if e := env(t, tpl, "ApiFunction", map[string]string{"VaultAccount": sample["VaultAccount"], "Assets": sample["Assets"],
		"SigningSecretArn": sample["SigningSecretArn"], "IdempotencyKeyMaxLength": strconv.Itoa(transfer.MaxKeyLengthBound)}); e["TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH"] != strconv.Itoa(transfer.MaxKeyLengthBound) {
		t.Errorf("ApiFunction TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH = %q, want the parameter", e["TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH"])
	}
}
