package signing

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
)

func testKeys(t *testing.T) Keys {
	t.Helper()
	k, err := GenerateKeys(2)
	if err != nil {
		t.Fatal(err)
	}
	k.ChannelMaster = NewMasterSeed(bytes.Repeat([]byte{0xab}, 64))
	return k
}

// secrets lists every secret string in k, in the forms that could leak.
func secrets(k Keys) []string {
	var s []string
	for _, kp := range append([]*keypair.Full{k.Vault, k.Fee}, k.Channels...) {
		if kp != nil {
			s = append(s, kp.Seed(), kp.Seed()[:20])
		}
	}
	if k.ChannelMaster.IsSet() {
		b := k.ChannelMaster.Bytes()
		s = append(s, hex.EncodeToString(b)[:16], strings.ToUpper(hex.EncodeToString(b)[:16]), string(b[:8]),
			strings.Trim(fmt.Sprint(b[:4]), "[]"))
	}
	return s
}

func assertNoSecret(t *testing.T, what, out string, k Keys) {
	t.Helper()
	for _, s := range secrets(k) {
		if strings.Contains(out, s) {
			t.Errorf("%s leaks a secret: %s", what, out)
			return
		}
	}
}

func TestKeysNeverFormatSeeds(t *testing.T) {
	k := testKeys(t)
	doc, err := k.MarshalSecret()
	if err != nil {
		t.Fatal(err)
	}
	local := NewLocalSecrets()
	local.Put("local/signing", doc)
	src, err := NewSecretKeys(SecretKeysConfig{Client: local, SecretID: "local/signing"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Keys(context.Background()); err != nil {
		t.Fatal(err)
	}
	outputs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		outputs["Keys "+verb] = fmt.Sprintf(verb, k)
		outputs["*Keys "+verb] = fmt.Sprintf(verb, &k)
		outputs["[]Keys "+verb] = fmt.Sprintf(verb, []Keys{k})
		outputs["struct "+verb] = fmt.Sprintf(verb, struct{ K Keys }{k})
		if verb == "%v" || verb == "%+v" || verb == "%#v" {
			// With other verbs fmt prints the *keypair.Full values of an unexported Keys field
			// itself (its bad-verb path); only formatting that Keys can intercept is promised.
			outputs["unexported "+verb] = fmt.Sprintf(verb, struct{ k Keys }{k})
		}
		outputs["MasterSeed "+verb] = fmt.Sprintf(verb, k.ChannelMaster)
		outputs["unexported MasterSeed "+verb] = fmt.Sprintf(verb, struct{ m MasterSeed }{k.ChannelMaster})
		outputs["SecretKeys "+verb] = fmt.Sprintf(verb, src)
		outputs["unexported SecretKeys "+verb] = fmt.Sprintf(verb, struct{ s *SecretKeys }{src})
		outputs["LocalSecrets "+verb] = fmt.Sprintf(verb, local)
		outputs["unexported LocalSecrets "+verb] = fmt.Sprintf(verb, struct{ l *LocalSecrets }{local})
	}
	outputs["String"] = k.String()
	outputs["GoString"] = k.GoString()
	outputs["error"] = fmt.Errorf("loading %v: %w", k, errors.New("x")).Error()
	j, err := json.Marshal(map[string]any{"keys": k, "master": k.ChannelMaster})
	if err != nil {
		t.Fatal(err)
	}
	outputs["json"] = string(j)
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("keys", "keys", k, "ptr", &k, "master", k.ChannelMaster)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("keys", "keys", k, "master", k.ChannelMaster, "src", src)
	outputs["slog"] = buf.String()
	for what, out := range outputs {
		assertNoSecret(t, what, out, k)
	}
	// Public keys may (and should) be shown.
	for _, what := range []string{"Keys %v", "json", "slog"} {
		if !strings.Contains(outputs[what], k.Vault.Address()) || !strings.Contains(outputs[what], k.Channels[1].Address()) {
			t.Errorf("%s does not show the public keys: %s", what, outputs[what])
		}
	}
}
