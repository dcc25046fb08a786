package signing

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/strictjson"
)

// The signing secret (README.md, "Configuration") is one JSON document, the SecretString of the AWS
// Secrets Manager secret named by SIGNING_SECRET_ARN:
//
//	{
//	  "vaultSeed":         "S...",          // required: signs the vault's payments
//	  "feeSeed":           "S...",          // optional: pays fee-bump transactions (CAP-15)
//	  "channelSeeds":      ["S...", "S..."], // optional: channel accounts' keys
//	  "channelMasterSeed": "<hex>"          // optional: SEP-5 master seed, the 16 to 64 byte BIP-39
//	                                        // seed in hex, to derive channel keys
//	}
//
// Seeds are ed25519 secret seeds in strkey form (SEP-23, "S..."). The document is read with
// internal/strictjson, so it has one meaning or none: an unknown field (a misspelt one, or one in
// another case such as "VAULTSEED") is refused rather than a key silently dropped or taken, and a
// field named twice is refused rather than the last value loaded. Error messages name fields,
// never values.

// Keys are the signing keys. Vault is required; Fee and the channel keys are optional (used by
// fee bumps and channel accounts). Keys formats, logs and marshals to JSON with public
// keys only; never format the *keypair.Full values themselves (their %v shows the seed).
type Keys struct {
	// Vault signs the vault's operations (the signer of VAULT_ACCOUNT).
	Vault *keypair.Full
	// Fee pays for fee-bump transactions; nil when fee bumps are off.
	Fee *keypair.Full
	// Channels are channel accounts' keys listed in the secret.
	Channels []*keypair.Full
	// ChannelMaster is the SEP-5 master seed channel keys are derived from; empty if not set.
	ChannelMaster MasterSeed
	// VaultSigner and FeeSigner, when set, sign in place of Vault and Fee: keys this process
	// never holds (KMSSigner, SIGNER=kms; signer.go).
	VaultSigner Signer
	FeeSigner   Signer
}

// VaultKey is the key that signs the vault's operations: VaultSigner, else Vault; nil if neither.
func (k Keys) VaultKey() Signer {
	if k.VaultSigner != nil {
		return k.VaultSigner
	}
	return seedSigner(k.Vault)
}

// FeeKey is the fee account's key: FeeSigner, else Fee; nil if neither.
func (k Keys) FeeKey() Signer {
	if k.FeeSigner != nil {
		return k.FeeSigner
	}
	return seedSigner(k.Fee)
}

func signerAddress(s Signer) string {
	if s == nil {
		return ""
	}
	return s.Address()
}

// MasterSeed is secret key material (a BIP-39 seed, SEP-5). It formats as "[redacted]", and
// keeps its bytes inside a closure, so even reflection-based printing of a struct holding it in
// an unexported field (where fmt cannot call Format) shows a function address, not the bytes.
type MasterSeed struct{ b func() []byte }

// NewMasterSeed returns a MasterSeed holding a copy of b.
func NewMasterSeed(b []byte) MasterSeed {
	if len(b) == 0 {
		return MasterSeed{}
	}
	c := append([]byte(nil), b...)
	return MasterSeed{b: func() []byte { return append([]byte(nil), c...) }}
}

// Bytes returns a copy of the seed, nil if unset.
func (m MasterSeed) Bytes() []byte {
	if m.b == nil {
		return nil
	}
	return m.b()
}

// IsSet reports whether a seed is held.
func (m MasterSeed) IsSet() bool { return m.b != nil }

// String implements fmt.Stringer without revealing the seed.
func (m MasterSeed) String() string {
	if !m.IsSet() {
		return "[none]"
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer without revealing the seed.
func (m MasterSeed) GoString() string { return m.String() }

// Format implements fmt.Formatter: every verb (%v, %+v, %#v, %s, %x, ...) prints String.
func (m MasterSeed) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(m.String())) }

// MarshalJSON writes the redacted form.
func (m MasterSeed) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// LogValue implements slog.LogValuer.
func (m MasterSeed) LogValue() slog.Value { return slog.StringValue(m.String()) }

func address(kp *keypair.Full) string {
	if kp == nil {
		return ""
	}
	return kp.Address()
}

// publicView is what Keys shows of itself: public keys only.
type publicView struct {
	Vault         string   `json:"vault"`
	Fee           string   `json:"fee,omitempty"`
	Channels      []string `json:"channels,omitempty"`
	ChannelMaster bool     `json:"channelMaster,omitempty"`
}

func (k Keys) public() publicView {
	v := publicView{Vault: signerAddress(k.VaultKey()), Fee: signerAddress(k.FeeKey()), ChannelMaster: k.ChannelMaster.IsSet()}
	for _, c := range k.Channels {
		v.Channels = append(v.Channels, address(c))
	}
	return v
}

// String shows the public keys: "stellar.Keys{vault=G... fee=G... channels=[G...] channelMaster=set}".
func (k Keys) String() string {
	v := k.public()
	var b strings.Builder
	b.WriteString("stellar.Keys{vault=")
	b.WriteString(v.Vault)
	if v.Fee != "" {
		b.WriteString(" fee=" + v.Fee)
	}
	if len(v.Channels) > 0 {
		b.WriteString(" channels=[" + strings.Join(v.Channels, " ") + "]")
	}
	if v.ChannelMaster {
		b.WriteString(" channelMaster=[redacted]")
	}
	b.WriteString("}")
	return b.String()
}

// GoString implements fmt.GoStringer with String.
func (k Keys) GoString() string { return k.String() }

// Format implements fmt.Formatter: every verb prints String, so %v, %+v and %#v never reach the
// seeds inside the keypairs.
func (k Keys) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// MarshalJSON writes the public keys only. Use MarshalSecret for the secret document.
func (k Keys) MarshalJSON() ([]byte, error) { return json.Marshal(k.public()) }

// LogValue implements slog.LogValuer with the public keys.
func (k Keys) LogValue() slog.Value {
	v := k.public()
	attrs := []slog.Attr{slog.String("vault", v.Vault)}
	if v.Fee != "" {
		attrs = append(attrs, slog.String("fee", v.Fee))
	}
	if len(v.Channels) > 0 {
		attrs = append(attrs, slog.Any("channels", v.Channels))
	}
	if v.ChannelMaster {
		attrs = append(attrs, slog.Bool("channelMaster", true))
	}
	return slog.GroupValue(attrs...)
}

// secretDocument is the JSON form of the signing secret.
type secretDocument struct {
	VaultSeed         string   `json:"vaultSeed,omitempty"`
	FeeSeed           string   `json:"feeSeed,omitempty"`
	ChannelSeeds      []string `json:"channelSeeds,omitempty"`
	ChannelMasterSeed string   `json:"channelMasterSeed,omitempty"`
}

// maxQuotedField is the longest unknown field name (quotes included) a ParseKeys error quotes:
// shorter than a secret seed (56 characters).
const maxQuotedField = 32

// ErrBadSecret is wrapped by every ParseKeys error.
var ErrBadSecret = errors.New("stellar: signing secret is invalid")

func badSecret(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSecret, fmt.Sprintf(format, args...))
}

// ParseKeys parses the signing secret document (see the format above). Errors wrap ErrBadSecret
// and name the offending field, never its value.
func ParseKeys(doc []byte) (Keys, error) { return parseKeys(doc, false) }

// ParseChannelKeys parses the signing secret of SIGNER=kms, which holds channel keys only
// (channelSeeds, channelMasterSeed): the vault's and the fee account's keys are in KMS, so a
// vaultSeed or feeSeed here is refused rather than left lying around. Errors wrap ErrBadSecret.
func ParseChannelKeys(doc []byte) (Keys, error) { return parseKeys(doc, true) }

func parseKeys(doc []byte, channelsOnly bool) (Keys, error) {
	var d secretDocument
	if err := strictjson.Decode(doc, &d); err != nil {
		return Keys{}, secretDocumentError(err)
	}
	var k Keys
	var err error
	if channelsOnly {
		if d.VaultSeed != "" || d.FeeSeed != "" {
			return Keys{}, badSecret("with SIGNER=kms the secret holds channel keys only; remove vaultSeed and feeSeed (the keys are in KMS)")
		}
	} else if d.VaultSeed == "" {
		return Keys{}, badSecret("vaultSeed is required")
	}
	if d.VaultSeed != "" {
		if k.Vault, err = parseSeed("vaultSeed", d.VaultSeed); err != nil {
			return Keys{}, err
		}
	}
	if d.FeeSeed != "" {
		if k.Fee, err = parseSeed("feeSeed", d.FeeSeed); err != nil {
			return Keys{}, err
		}
	}
	seen := map[string]bool{}
	for i, s := range d.ChannelSeeds {
		kp, err := parseSeed(fmt.Sprintf("channelSeeds[%d]", i), s)
		if err != nil {
			return Keys{}, err
		}
		if seen[kp.Address()] {
			return Keys{}, badSecret("channelSeeds[%d] repeats an earlier channel (%s)", i, kp.Address())
		}
		seen[kp.Address()] = true
		k.Channels = append(k.Channels, kp)
	}
	if d.ChannelMasterSeed != "" {
		b, err := hex.DecodeString(d.ChannelMasterSeed)
		if err != nil || len(b) < 16 || len(b) > 64 {
			return Keys{}, badSecret("channelMasterSeed must be 16 to 64 bytes in hex")
		}
		k.ChannelMaster = NewMasterSeed(b)
	}
	return k, nil
}

// secretDocumentError is a strictjson refusal of the secret document as an ErrBadSecret. The
// messages are written here rather than taken from strictjson: theirs may quote a character of the
// input (a syntax error) or a field name up to strictjson.MaxQuotedName bytes, long enough to be a
// seed pasted as a name; these quote a name only when it is shorter than any seed
// (maxQuotedField) and never quote input.
func secretDocumentError(err error) error {
	const fields = "vaultSeed, feeSeed, channelSeeds, channelMasterSeed"
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return badSecret("not a JSON object")
	}
	name := func() string {
		if q := fmt.Sprintf("%q", se.Field); len(q) <= maxQuotedField {
			return q
		}
		return fmt.Sprintf("(a name of %d bytes, not shown)", len(se.Field))
	}
	switch se.Kind {
	case strictjson.KindEmpty:
		return badSecret("empty: not a JSON object; the fields are %s", fields)
	case strictjson.KindSyntax:
		return badSecret("not valid JSON (at byte %d)", se.Offset)
	case strictjson.KindTruncated:
		return badSecret("not valid JSON (it ends inside a value)")
	case strictjson.KindNotObject:
		return badSecret("must be a JSON object, not a JSON %s", se.JSONType)
	case strictjson.KindUnknownField:
		if se.CaseOf != "" {
			return badSecret("unknown field %s; field names are case-sensitive: did you mean %q?", name(), se.CaseOf)
		}
		return badSecret("unknown field %s; the fields are %s", name(), fields)
	case strictjson.KindDuplicateField:
		// Two values for one key: encoding/json would load the last, a reader of the secret may
		// take the first. Neither value is shown.
		return badSecret("field %s appears more than once; keep one", name())
	case strictjson.KindWrongType:
		return badSecret("field %s must be a %s", name(), se.Want)
	case strictjson.KindTrailingData:
		return badSecret("trailing data after the JSON object (at byte %d)", se.Offset)
	}
	return badSecret("not a JSON object")
}

func parseSeed(field, seed string) (*keypair.Full, error) {
	kp, err := keypair.ParseFull(strings.TrimSpace(seed))
	if err != nil {
		// keypair's error is not shown: it is about the seed's content.
		return nil, badSecret("%s is not a valid secret seed (S...)", field)
	}
	return kp, nil
}

// MarshalSecret writes k as the signing secret document, seeds included. It is for the local
// stack, which generates keys and hands them to the same loader; never log its output.
func (k Keys) MarshalSecret() ([]byte, error) {
	if k.Vault == nil && len(k.Channels) == 0 && !k.ChannelMaster.IsSet() {
		return nil, errors.New("stellar: keys have no vault key and no channel keys")
	}
	var d secretDocument
	if k.Vault != nil {
		d.VaultSeed = k.Vault.Seed()
	}
	if k.Fee != nil {
		d.FeeSeed = k.Fee.Seed()
	}
	for _, c := range k.Channels {
		d.ChannelSeeds = append(d.ChannelSeeds, c.Seed())
	}
	if k.ChannelMaster.IsSet() {
		d.ChannelMasterSeed = hex.EncodeToString(k.ChannelMaster.Bytes())
	}
	return json.Marshal(d)
}

// GenerateKeys returns random keys for a local network: a vault, a fee account and n channels.
func GenerateKeys(channels int) (Keys, error) {
	var k Keys
	var err error
	if k.Vault, err = keypair.Random(); err != nil {
		return Keys{}, err
	}
	if k.Fee, err = keypair.Random(); err != nil {
		return Keys{}, err
	}
	for range channels {
		c, err := keypair.Random()
		if err != nil {
			return Keys{}, err
		}
		k.Channels = append(k.Channels, c)
	}
	return k, nil
}

// KeySource supplies the current signing keys. Implementations are safe for concurrent use.
type KeySource interface {
	Keys(ctx context.Context) (Keys, error)
}

// StaticKeys is a KeySource that always returns the same keys (tests, or keys already loaded).
type StaticKeys struct{ K Keys }

// Keys returns s.K.
func (s StaticKeys) Keys(context.Context) (Keys, error) {
	if s.K.VaultKey() == nil {
		return Keys{}, errors.New("stellar: static keys have no vault key")
	}
	return s.K, nil
}

// SecretsManagerAPI is the part of the Secrets Manager client that SecretKeys uses;
// *secretsmanager.Client implements it.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// LocalSecrets is an in-memory SecretsManagerAPI (secret ID -> SecretString). The local stack
// puts its generated keys' document (Keys.MarshalSecret) here and loads them through SecretKeys,
// the same path as in AWS. It formats without its contents, and keeps them inside a closure so
// reflection-based printing cannot reach them either.
type LocalSecrets struct {
	docs func() map[string]string
	mu   sync.Mutex
}

// NewLocalSecrets returns an empty store.
func NewLocalSecrets() *LocalSecrets {
	m := map[string]string{}
	return &LocalSecrets{docs: func() map[string]string { return m }}
}

// Put stores doc as the value of secret id.
func (l *LocalSecrets) Put(id string, doc []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.docs()[id] = string(doc)
}

// GetSecretValue returns the stored document for in.SecretId.
func (l *LocalSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	id := aws.ToString(in.SecretId)
	l.mu.Lock()
	doc, ok := l.docs()[id]
	l.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("local secrets: no secret %q", id)
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(doc), Name: aws.String(id)}, nil
}

// Format implements fmt.Formatter without the documents.
func (l *LocalSecrets) Format(f fmt.State, _ rune) {
	_, _ = f.Write([]byte("stellar.LocalSecrets{[redacted]}"))
}

// DefaultKeyRefresh is how long SecretKeys serves keys before reading the secret again.
const DefaultKeyRefresh = 5 * time.Minute

// retryAfterFailure is how long SecretKeys serves stale keys after a failed refresh before
// trying again.
const retryAfterFailure = 10 * time.Second

// SecretKeysConfig configures SecretKeys.
type SecretKeysConfig struct {
	Client SecretsManagerAPI
	// SecretID is the secret's ARN or name (SIGNING_SECRET_ARN).
	SecretID string
	// Refresh is how long loaded keys are served before the secret is read again (a rotation
	// takes effect within it); 0 means DefaultKeyRefresh.
	Refresh time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ChannelsOnly reads the secret with ParseChannelKeys (SIGNER=kms): channel keys only.
	ChannelsOnly bool
}

// SecretKeys is a KeySource that reads the signing secret from AWS Secrets Manager, at the first
// call and again once Refresh has passed. If a refresh fails it keeps serving the keys it has
// (a Secrets Manager outage does not stop signing) and tries again 10 s later; with no keys
// loaded yet the error is returned.
type SecretKeys struct {
	cfg SecretKeysConfig

	mu        sync.Mutex
	keys      Keys
	loaded    bool
	nextFetch time.Time
}

// NewSecretKeys returns a SecretKeys; nothing is read until the first Keys call.
func NewSecretKeys(cfg SecretKeysConfig) (*SecretKeys, error) {
	if cfg.Client == nil {
		return nil, errors.New("stellar: SecretKeys needs a Secrets Manager client")
	}
	if cfg.SecretID == "" {
		return nil, errors.New("stellar: SecretKeys needs a secret ID (SIGNING_SECRET_ARN)")
	}
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultKeyRefresh
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &SecretKeys{cfg: cfg}, nil
}

// Keys returns the cached keys, reading the secret when they are missing or due for refresh.
// Concurrent callers wait for one read.
func (s *SecretKeys) Keys(ctx context.Context) (Keys, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Now()
	if s.loaded && now.Before(s.nextFetch) {
		return s.keys, nil
	}
	k, err := s.fetch(ctx)
	if err != nil {
		if s.loaded {
			s.nextFetch = now.Add(min(retryAfterFailure, s.cfg.Refresh))
			return s.keys, nil
		}
		return Keys{}, err
	}
	s.keys, s.loaded, s.nextFetch = k, true, now.Add(s.cfg.Refresh)
	return k, nil
}

// Format implements fmt.Formatter: the secret ID and the loaded public keys, never the seeds.
func (s *SecretKeys) Format(f fmt.State, _ rune) {
	s.mu.Lock()
	keys, loaded := s.keys, s.loaded
	s.mu.Unlock()
	if !loaded {
		_, _ = fmt.Fprintf(f, "stellar.SecretKeys{secret=%s}", s.cfg.SecretID)
		return
	}
	_, _ = fmt.Fprintf(f, "stellar.SecretKeys{secret=%s %s}", s.cfg.SecretID, keys.String())
}

func (s *SecretKeys) fetch(ctx context.Context) (Keys, error) {
	out, err := s.cfg.Client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.cfg.SecretID)})
	if err != nil {
		return Keys{}, fmt.Errorf("stellar: reading signing secret %s: %w", s.cfg.SecretID, err)
	}
	var doc []byte
	switch {
	case out.SecretString != nil:
		doc = []byte(*out.SecretString)
	case out.SecretBinary != nil:
		doc = out.SecretBinary
	default:
		return Keys{}, fmt.Errorf("stellar: signing secret %s has no value", s.cfg.SecretID)
	}
	k, err := parseKeys(doc, s.cfg.ChannelsOnly)
	if err != nil {
		return Keys{}, fmt.Errorf("stellar: signing secret %s: %w", s.cfg.SecretID, err)
	}
	return k, nil
}
