package signing

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

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
