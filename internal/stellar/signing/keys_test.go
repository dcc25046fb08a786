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
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
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

func TestParseKeysRoundTrip(t *testing.T) {
	k := testKeys(t)
	doc, err := k.MarshalSecret()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseKeys(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Vault.Address() != k.Vault.Address() || got.Fee.Address() != k.Fee.Address() ||
		len(got.Channels) != 2 || got.Channels[1].Address() != k.Channels[1].Address() ||
		!bytes.Equal(got.ChannelMaster.Bytes(), k.ChannelMaster.Bytes()) {
		t.Errorf("round trip: got %v, want %v", got, k)
	}
	// Only the vault is required.
	only, err := ParseKeys([]byte(`{"vaultSeed":"` + k.Vault.Seed() + `"}`))
	if err != nil || only.Fee != nil || only.Channels != nil || only.ChannelMaster.IsSet() {
		t.Errorf("vault only: %v, %v", only, err)
	}
}

func TestParseKeysErrorsNameFieldsNotValues(t *testing.T) {
	k := testKeys(t)
	seed := k.Vault.Seed()
	// A seed with one character changed: a checksum failure.
	bad := []byte(seed)
	bad[20] ^= 1
	cases := map[string]string{
		`{}`:                                  "vaultSeed is required",
		`{"vaultSeed":"` + string(bad) + `"}`: "vaultSeed is not a valid secret seed",
		`{"vaultSeed":"` + k.Vault.Address() + `"}`:                                                   "vaultSeed is not a valid secret seed",
		`{"vaultSeed":"` + seed + `","feeSeed":"x"}`:                                                  "feeSeed is not a valid secret seed",
		`{"vaultSeed":"` + seed + `","channelSeeds":["` + seed + `","` + string(bad) + `"]}`:          "channelSeeds[1] is not a valid secret seed",
		`{"vaultSeed":"` + seed + `","channelSeeds":["` + k.Fee.Seed() + `","` + k.Fee.Seed() + `"]}`: "channelSeeds[1] repeats",
		`{"vaultSeed":"` + seed + `","channelMasterSeed":"zz` + seed + `"}`:                           "channelMasterSeed must be",
		`{"vaultSeed":"` + seed + `","vaultseed2":"` + seed + `"}`:                                    `unknown field "vaultseed2"`,
		`{"vaultSeed":` + seed + `}`:                                                                  "not valid JSON",
		`{"vaultSeed":"` + seed + `"` + seed:                                                          "not valid JSON",
		`{"vaultSeed":["` + seed + `"]}`:                                                              `field "vaultSeed" must be a string`,
		`["` + seed + `"]`:                                                                            "must be a",
		`{"vaultSeed":"` + seed + `"} {}`:                                                             "trailing data",
		``:                                                                                            "not a JSON object",
	}
	for doc, want := range cases {
		_, err := ParseKeys([]byte(doc))
		if err == nil || !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%.30q...) = %v, want an ErrBadSecret containing %q", doc, err, want)
			continue
		}
		assertNoSecret(t, "ParseKeys error", err.Error(), k)
		if strings.Contains(err.Error(), string(bad[:20])) {
			t.Errorf("ParseKeys error quotes the bad seed: %v", err)
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

// fakeSM is a Secrets Manager client serving one document, counting reads.
type fakeSM struct {
	mu    sync.Mutex
	doc   string
	err   error
	reads int
}

func (f *fakeSM) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if aws.ToString(in.SecretId) != "arn:aws:secretsmanager:eu-west-1:123456789012:secret:signing" {
		return nil, errors.New("ResourceNotFoundException")
	}
	if f.err != nil {
		return nil, f.err
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(f.doc)}, nil
}

func (f *fakeSM) set(doc string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.doc, f.err = doc, err
}

func (f *fakeSM) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestSecretKeysCachesAndRefreshes(t *testing.T) {
	ctx := context.Background()
	k1, k2 := testKeys(t), testKeys(t)
	doc1, _ := k1.MarshalSecret()
	doc2, _ := k2.MarshalSecret()
	sm := &fakeSM{doc: string(doc1)}
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	src, err := NewSecretKeys(SecretKeysConfig{Client: sm, SecretID: "arn:aws:secretsmanager:eu-west-1:123456789012:secret:signing",
		Refresh: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	vault := func() string {
		t.Helper()
		k, err := src.Keys(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return k.Vault.Address()
	}
	if vault() != k1.Vault.Address() || sm.count() != 1 {
		t.Fatalf("first read: reads=%d", sm.count())
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { _, _ = src.Keys(ctx) })
	}
	wg.Wait()
	sm.set(string(doc2), nil)
	clock.advance(59 * time.Second)
	if vault() != k1.Vault.Address() || sm.count() != 1 {
		t.Fatalf("within refresh: reads=%d", sm.count())
	}
	clock.advance(time.Second)
	if vault() != k2.Vault.Address() || sm.count() != 2 {
		t.Fatalf("after refresh: reads=%d", sm.count())
	}

	// A failed refresh keeps the loaded keys and retries 10 s later, not on every call.
	sm.set("", errors.New("ThrottlingException"))
	clock.advance(time.Minute)
	if vault() != k2.Vault.Address() || sm.count() != 3 {
		t.Fatalf("failed refresh: reads=%d", sm.count())
	}
	clock.advance(5 * time.Second)
	if vault() != k2.Vault.Address() || sm.count() != 3 {
		t.Fatalf("backing off: reads=%d", sm.count())
	}
	sm.set(string(doc1), nil)
	clock.advance(5 * time.Second)
	if vault() != k1.Vault.Address() || sm.count() != 4 {
		t.Fatalf("recovered: reads=%d", sm.count())
	}
}

func TestSecretKeysErrors(t *testing.T) {
	ctx := context.Background()
	k := testKeys(t)
	arn := "arn:aws:secretsmanager:eu-west-1:123456789012:secret:signing"
	bad := `{"vaultSeed":"` + k.Vault.Seed()[:55] + `"}`
	src, _ := NewSecretKeys(SecretKeysConfig{Client: &fakeSM{doc: bad}, SecretID: arn})
	_, err := src.Keys(ctx)
	if !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), arn) {
		t.Errorf("bad document: %v", err)
	}
	assertNoSecret(t, "SecretKeys error", err.Error(), k)

	src, _ = NewSecretKeys(SecretKeysConfig{Client: &fakeSM{err: errors.New("AccessDeniedException")}, SecretID: arn})
	if _, err := src.Keys(ctx); err == nil || !strings.Contains(err.Error(), "AccessDeniedException") {
		t.Errorf("read failure: %v", err)
	}
	if _, err := NewSecretKeys(SecretKeysConfig{SecretID: arn}); err == nil {
		t.Error("no client accepted")
	}
	if _, err := NewSecretKeys(SecretKeysConfig{Client: &fakeSM{}}); err == nil {
		t.Error("no secret ID accepted")
	}
}

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
