package signing

import (
	"context"
	"testing"
)

func TestLocalSecretsFeedTheSameLoader(t *testing.T) {
	k := testKeys(t)
	doc, _ := k.MarshalSecret()
	local := NewLocalSecrets()
	local.Put("local/signing", doc)
	src, err := NewSecretKeys(SecretKeysConfig{Client: local, SecretID: "local/signing"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Keys(context.Background())
	if err != nil || got.Vault.Address() != k.Vault.Address() {
		t.Fatalf("LocalSecrets: %v, %v", got, err)
	}
	if _, err := (StaticKeys{}).Keys(context.Background()); err == nil {
		t.Error("StaticKeys without a vault key accepted")
	}
	if got, _ := (StaticKeys{K: k}).Keys(context.Background()); got.Vault != k.Vault {
		t.Error("StaticKeys returned other keys")
	}
}
