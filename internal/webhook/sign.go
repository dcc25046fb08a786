package webhook

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// The headers of a signed delivery (the Standard Webhooks specification, "Webhook headers").
const (
	HeaderID        = standardwebhooks.HeaderWebhookID        // "webhook-id"
	HeaderTimestamp = standardwebhooks.HeaderWebhookTimestamp // "webhook-timestamp"
	HeaderSignature = standardwebhooks.HeaderWebhookSignature // "webhook-signature"
)

// SecretPrefix starts every serialized signing secret: "whsec_" and the key's standard base64
// (the specification's "Secret serialization").
const SecretPrefix = "whsec_"

// The specification's bounds on a symmetric signing secret's key: "Random. At least 24 bytes
// (192 bits, 512 maximum)". We read the maximum as 512 bits, 64 bytes, as the specification's own
// libraries generate 24 to 64.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
	// MaxSecrets bounds the secrets a delivery is signed with: the current one and, during a
	// rotation, the ones before it.
	MaxSecrets = 4
)

// ErrInvalidSecret is wrapped by ParseSecrets for a value that is not one to MaxSecrets "whsec_"
// secrets. Its errors never contain the value.
var ErrInvalidSecret = errors.New("webhook: invalid signing secret")

// Signer signs deliveries with one or more keys, the first the current one (Sign). Its zero value
// signs nothing; build it with ParseSecrets.
type Signer struct {
	keys []*standardwebhooks.Webhook
}

// ParseSecrets reads a Secrets Manager SecretString: one to MaxSecrets "whsec_<base64>" secrets
// separated by spaces (or any white space), each of MinSecretBytes to MaxSecretBytes. The
// errors wrap ErrInvalidSecret and name the secret's position only, never its text.
func ParseSecrets(s string) (Signer, error) {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return Signer{}, fmt.Errorf("%w: no secret (expected %s<base64>, space-separated for a rotation)", ErrInvalidSecret, SecretPrefix)
	}
	if len(fields) > MaxSecrets {
		return Signer{}, fmt.Errorf("%w: %d secrets, at most %d", ErrInvalidSecret, len(fields), MaxSecrets)
	}
	var sg Signer
	for i, f := range fields {
		enc, ok := strings.CutPrefix(f, SecretPrefix)
		if !ok {
			return Signer{}, fmt.Errorf("%w: secret %d does not start with %s", ErrInvalidSecret, i+1, SecretPrefix)
		}
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return Signer{}, fmt.Errorf("%w: secret %d is not standard base64 after %s", ErrInvalidSecret, i+1, SecretPrefix)
		}
		if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
			return Signer{}, fmt.Errorf("%w: secret %d has %d bytes, want %d to %d", ErrInvalidSecret, i+1, len(key), MinSecretBytes, MaxSecretBytes)
		}
		wh, err := standardwebhooks.NewWebhookRaw(key)
		if err != nil {
			return Signer{}, fmt.Errorf("%w: secret %d", ErrInvalidSecret, i+1)
		}
		sg.keys = append(sg.keys, wh)
	}
	return sg, nil
}

// Sign answers the webhook-timestamp and webhook-signature header values of a delivery of body
// under id at t: t in whole Unix seconds, and "v1,<base64 HMAC-SHA256>" per key, space separated,
// over "<id>.<timestamp>.<body>". id must not contain "." (the specification: it would let one
// signed content pass for another); ours are hex.
func (s Signer) Sign(id string, t time.Time, body []byte) (timestamp, signature string, err error) {
	if len(s.keys) == 0 {
		return "", "", errors.New("webhook: no signing key")
	}
	if id == "" || strings.Contains(id, ".") {
		return "", "", fmt.Errorf("webhook: message id %q is empty or contains '.'", id)
	}
	sigs := make([]string, 0, len(s.keys))
	for _, k := range s.keys {
		sig, err := k.Sign(id, t, body)
		if err != nil {
			return "", "", fmt.Errorf("webhook: signing: %w", err)
		}
		sigs = append(sigs, sig)
	}
	return strconv.FormatInt(t.Unix(), 10), strings.Join(sigs, " "), nil
}

// Keys is how many keys s signs with.
func (s Signer) Keys() int { return len(s.keys) }

// Fixed serves one Signer for every delivery (Config.Secrets): the local stack's, and tests'.
func Fixed(s Signer) interface {
	Signer(ctx context.Context) (Signer, error)
} {
	return fixed{s}
}

type fixed struct{ s Signer }

func (f fixed) Signer(context.Context) (Signer, error) { return f.s, nil }
