package signing

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

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
