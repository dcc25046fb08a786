package signing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

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
