package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// SecretsManagerAPI is the part of Secrets Manager the function reads its signing secrets with;
// *secretsmanager.Client satisfies it.
type SecretsManagerAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// SecretTTL is how long a read of the signing secret serves before the next delivery reads it
// again: the longest a rotation takes to reach every environment.
const SecretTTL = 5 * time.Minute

// SecretSource is the signing secret held in Secrets Manager (the secret's AWSCURRENT
// SecretString, parsed by ParseSecrets), read at most once per TTL per process. A read that fails
// keeps serving the last good Signer until one succeeds; with none, the delivery fails and is
// retried.
//
// Signer answers the Signer it serves and, when its last read failed, an error too: a caller
// signs with the Signer (when it has keys) and reports the error, so that an operator's bad
// rotation (a malformed value) is heard of without stopping the deliveries.
type SecretSource struct {
	API SecretsManagerAPI
	// ID is the secret's ARN or name (WEBHOOK_SECRET_ARN).
	ID string
	// TTL is SecretTTL when zero.
	TTL time.Duration
	// Now is time.Now when nil.
	Now func() time.Time

	mu     sync.Mutex
	signer Signer
	read   time.Time
}

// Signer answers the current Signer, reading the secret when the last read is older than the TTL.
// Its errors name the secret's ID, never its value.
func (s *SecretSource) Signer(ctx context.Context) (Signer, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	ttl := s.TTL
	if ttl <= 0 {
		ttl = SecretTTL
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	if s.signer.Keys() > 0 && t.Sub(s.read) < ttl {
		return s.signer, nil
	}
	out, err := s.API.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(s.ID)})
	if err == nil && out.SecretString == nil {
		err = fmt.Errorf("%w: the secret has no SecretString", ErrInvalidSecret)
	}
	var sg Signer
	if err == nil {
		sg, err = ParseSecrets(*out.SecretString)
	}
	if err != nil {
		if s.signer.Keys() > 0 {
			// The failed read counts as a read: the next comes a TTL later, not with every delivery.
			last := s.read
			s.read = t
			return s.signer, fmt.Errorf("webhook: reading the signing secret %s failed; signing with the secret read at %s: %w",
				s.ID, last.UTC().Format(time.RFC3339), err)
		}
		return Signer{}, fmt.Errorf("webhook: reading the signing secret %s: %w", s.ID, err)
	}
	s.signer, s.read = sg, t
	return sg, nil
}
