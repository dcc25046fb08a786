package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// MaxBodyBytes bounds a message body this package reads: a store key (at most 16 + 255 + 26
// bytes) and a claim ID in JSON are well under it.
const MaxBodyBytes = 1024

// ErrMalformed marks a message body that is not exactly a transfer.QueueMessage.
var ErrMalformed = errors.New("queue: malformed message")

// Encode is the body of m's message.
func Encode(m transfer.QueueMessage) (string, error) {
	if m.StoreKey == "" || m.ClaimID == "" {
		return "", fmt.Errorf("%w: a store key and a claim ID are required", ErrMalformed)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("queue: encode: %w", err)
	}
	return string(b), nil
}

// Decode reads a message body: one JSON object with exactly the string members storeKey
// ("transfer:" prefix) and claimId, at most MaxBodyBytes. Anything else is ErrMalformed (wrapped);
// the error quotes no part of the body.
func Decode(body string) (transfer.QueueMessage, error) {
	var m transfer.QueueMessage
	if len(body) > MaxBodyBytes {
		return m, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformed, len(body), MaxBodyBytes)
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return transfer.QueueMessage{}, fmt.Errorf("%w: not a message object", ErrMalformed)
	}
	if strings.TrimSpace(body[dec.InputOffset():]) != "" {
		return transfer.QueueMessage{}, fmt.Errorf("%w: data after the object", ErrMalformed)
	}
	if !strings.HasPrefix(m.StoreKey, "transfer:") || m.ClaimID == "" {
		return transfer.QueueMessage{}, fmt.Errorf("%w: storeKey and claimId are required", ErrMalformed)
	}
	return m, nil
}
