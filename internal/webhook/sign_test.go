package webhook

import (
	"encoding/base64"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// secretOf is a "whsec_" secret of n bytes, each b.
func secretOf(b byte, n int) string {
	return SecretPrefix + base64.StdEncoding.EncodeToString([]byte(strings.Repeat(string([]byte{b}), n)))
}

var (
	secretA  = secretOf('a', 32)
	secretB  = secretOf('b', 24)
	signedAt = time.Date(2026, 12, 2, 8, 0, 0, 0, time.UTC)
)

const eventID = "9b1d4c2f0a7e4f3c8d2b6a1e5f0c3d7a"

func TestParseSecretsRefusesWhatIsNotASecretAndNeverEchoesIt(t *testing.T) {
	for name, v := range map[string]string{
		"empty":         "  ",
		"no prefix":     base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32))),
		"not base64":    SecretPrefix + "!!notbase64!!",
		"23 bytes":      secretOf('c', 23),
		"65 bytes":      secretOf('c', 65),
		"five secrets":  strings.Join([]string{secretA, secretA, secretA, secretA, secretA}, " "),
		"second is bad": secretA + " whsec_short",
	} {
		_, err := ParseSecrets(v)
		if !errors.Is(err, ErrInvalidSecret) {
			t.Errorf("%s: err = %v, want ErrInvalidSecret", name, err)
			continue
		}
		for _, f := range strings.Fields(v) {
			if len(f) > 8 && strings.Contains(err.Error(), f[len(SecretPrefix):]) {
				t.Errorf("%s: the error %q shows the secret", name, err)
			}
		}
	}
	for _, v := range []string{secretA, secretOf('c', 64), secretA + "\n" + secretB} {
		if _, err := ParseSecrets(v); err != nil {
			t.Errorf("ParseSecrets(valid) = %v", err)
		}
	}
}

// The specification's own library, as a receiver would use it, accepts every signature we send,
// under each secret of a rotation alone.
func TestSignaturesVerifyWithTheSpecificationsLibraryUnderEachSecretOfARotation(t *testing.T) {
	sg, err := ParseSecrets(secretB + " " + secretA)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"detail":{"eventId":"` + eventID + `"}}`)
	ts, sig, err := sg.Sign(eventID, signedAt, body)
	if err != nil {
		t.Fatal(err)
	}
	if ts != "1796198400" {
		t.Fatalf("timestamp = %q, want the Unix seconds of %s", ts, signedAt)
	}
	if n := len(strings.Fields(sig)); n != 2 {
		t.Fatalf("signature header %q has %d signatures, want one per secret", sig, n)
	}
	h := http.Header{}
	h.Set(HeaderID, eventID)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, sig)
	for _, s := range []string{secretA, secretB} {
		wh, err := standardwebhooks.NewWebhook(s)
		if err != nil {
			t.Fatal(err)
		}
		if err := wh.VerifyIgnoringTimestamp(body, h); err != nil {
			t.Errorf("a receiver holding one secret of the rotation refused: %v", err)
		}
		if err := wh.VerifyIgnoringTimestamp(append(body, ' '), h); err == nil {
			t.Error("a changed body verified")
		}
	}
	other, _ := standardwebhooks.NewWebhook(secretOf('z', 32))
	if err := other.VerifyIgnoringTimestamp(body, h); err == nil {
		t.Error("a receiver with another secret accepted the signature")
	}
	h.Set(HeaderTimestamp, "1796198401")
	wh, _ := standardwebhooks.NewWebhook(secretA)
	if err := wh.VerifyIgnoringTimestamp(body, h); err == nil {
		t.Error("a changed timestamp verified: the timestamp is not signed")
	}
}

func TestSignRefusesAnIDThatCouldShiftTheSignedContent(t *testing.T) {
	sg, _ := ParseSecrets(secretA)
	for _, id := range []string{"", "a.b"} {
		if _, _, err := sg.Sign(id, signedAt, nil); err == nil {
			t.Errorf("Sign(%q) signed", id)
		}
	}
	if _, _, err := (Signer{}).Sign(eventID, signedAt, nil); err == nil {
		t.Error("the zero Signer signed")
	}
}
