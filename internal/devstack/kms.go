package devstack

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// localKMS is a minimal AWS KMS endpoint for the local stack: Ed25519 signing keys
// (ECC_NIST_EDWARDS25519, SIGN_VERIFY) held in memory, spoken to over the AWS JSON 1.1 protocol
// (POST /, X-Amz-Target: TrentService.<Operation>, Content-Type application/x-amz-json-1.1,
// blobs base64 in JSON; errors as {"__type": "<Exception>", "message": ...} with HTTP 400), so the
// AWS SDK's real KMS client talks to it with BaseEndpoint set (KMS_ENDPOINT).
//
// It is written here because no KMS emulator reachable from this project signs with Ed25519 (as
// of 2026-12): moto 5.2.5 (PyPI; moto/kms/utils.py KeySpec) offers RSA, the NIST and secp256k1
// ECC curves, SM2 and HMAC but not ECC_NIST_EDWARDS25519; nsmithuk/local-kms (Go) creates RSA,
// ECC NIST and secp256k1 keys only (src/handler/create_key.go); LocalStack needs Docker, which
// this machine does not have, and builds on moto's models.
//
// Operations: CreateKey (KeySpec ECC_NIST_EDWARDS25519 and KeyUsage SIGN_VERIFY only),
// GetPublicKey (a DER SubjectPublicKeyInfo, RFC 8410), Sign (SigningAlgorithm ED25519_SHA_512
// with MessageType RAW: pure Ed25519 over the message, at most 4096 bytes, as the KMS API
// Reference's Sign says). A key is named by its key ID or its ARN. Refuse makes every later call
// fail with the given exception (AccessDeniedException, ThrottlingException, ...), or with
// RefuseDown drop the connection unanswered (KMS unreachable), to show a KMS outage; Refuse("")
// ends it. Safe for concurrent use.
type localKMS struct {
	region, account string

	mu     sync.Mutex
	keys   map[string]ed25519.PrivateKey // key ID -> key
	refuse string
	signs  int
}

func newLocalKMS() *localKMS {
	return &localKMS{region: "us-east-1", account: "000000000000", keys: map[string]ed25519.PrivateKey{}}
}

// RefuseDown, given to Refuse, makes every later call end with the connection closed unanswered.
const RefuseDown = "down"

// Refuse makes every later call answer exception (empty: answer normally again).
func (k *localKMS) Refuse(exception string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.refuse = exception
}

// Signs is how many Sign calls succeeded.
func (k *localKMS) Signs() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.signs
}

func (k *localKMS) arn(id string) string {
	return fmt.Sprintf("arn:aws:kms:%s:%s:key/%s", k.region, k.account, id)
}

// kmsError is an AWS JSON 1.1 error answer.
type kmsError struct {
	Type    string `json:"__type"`
	Message string `json:"message"`
}

func (k *localKMS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "TrentService.")
	if r.Method != http.MethodPost || !ok {
		k.fail(w, "UnknownOperationException", "this local KMS answers POST / with X-Amz-Target TrentService.CreateKey, GetPublicKey or Sign")
		return
	}
	k.mu.Lock()
	refuse := k.refuse
	k.mu.Unlock()
	if refuse == RefuseDown {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
	}
	if refuse != "" {
		k.fail(w, refuse, "the local KMS was told to refuse ("+refuse+")")
		return
	}
	var in struct {
		KeyID            string `json:"KeyId"`
		KeySpec          string `json:"KeySpec"`
		KeyUsage         string `json:"KeyUsage"`
		Message          []byte `json:"Message"`
		MessageType      string `json:"MessageType"`
		SigningAlgorithm string `json:"SigningAlgorithm"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&in); err != nil {
		k.fail(w, "SerializationException", "the request body is not the JSON of a KMS request")
		return
	}
	switch op {
	case "CreateKey":
		if in.KeySpec != "ECC_NIST_EDWARDS25519" || in.KeyUsage != "SIGN_VERIFY" {
			k.fail(w, "UnsupportedOperationException", "this local KMS creates only KeySpec ECC_NIST_EDWARDS25519 with KeyUsage SIGN_VERIFY")
			return
		}
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			k.fail(w, "KMSInternalException", err.Error())
			return
		}
		idb := make([]byte, 16)
		_, _ = rand.Read(idb)
		h := hex.EncodeToString(idb)
		id := h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
		k.mu.Lock()
		k.keys[id] = priv
		k.mu.Unlock()
		k.answer(w, map[string]any{"KeyMetadata": map[string]any{
			"KeyId": id, "Arn": k.arn(id), "AWSAccountId": k.account, "CreationDate": float64(time.Now().Unix()),
			"Enabled": true, "KeyState": "Enabled", "KeyManager": "CUSTOMER", "Origin": "AWS_KMS",
			"KeySpec": in.KeySpec, "KeyUsage": in.KeyUsage, "SigningAlgorithms": []string{"ED25519_SHA_512"},
		}})
	case "GetPublicKey":
		id, priv, ok := k.key(in.KeyID)
		if !ok {
			k.fail(w, "NotFoundException", "no key "+in.KeyID)
			return
		}
		der, err := x509.MarshalPKIXPublicKey(priv.Public())
		if err != nil {
			k.fail(w, "KMSInternalException", err.Error())
			return
		}
		k.answer(w, map[string]any{"KeyId": k.arn(id), "PublicKey": der, "KeySpec": "ECC_NIST_EDWARDS25519",
			"KeyUsage": "SIGN_VERIFY", "SigningAlgorithms": []string{"ED25519_SHA_512"}})
	case "Sign":
		id, priv, ok := k.key(in.KeyID)
		switch {
		case !ok:
			k.fail(w, "NotFoundException", "no key "+in.KeyID)
		case in.SigningAlgorithm != "ED25519_SHA_512" || in.MessageType != "RAW":
			k.fail(w, "InvalidKeyUsageException", "this local KMS signs with ED25519_SHA_512 and MessageType RAW only")
		case len(in.Message) == 0 || len(in.Message) > 4096:
			k.fail(w, "ValidationException", "Message must be 1 to 4096 bytes")
		default:
			sig := ed25519.Sign(priv, in.Message)
			k.mu.Lock()
			k.signs++
			k.mu.Unlock()
			k.answer(w, map[string]any{"KeyId": k.arn(id), "Signature": sig, "SigningAlgorithm": "ED25519_SHA_512"})
		}
	default:
		k.fail(w, "UnknownOperationException", "this local KMS does not implement "+op)
	}
}

// key finds a key by key ID or key ARN.
func (k *localKMS) key(ref string) (string, ed25519.PrivateKey, bool) {
	id := ref
	if i := strings.LastIndex(ref, ":key/"); strings.HasPrefix(ref, "arn:") && i >= 0 {
		id = ref[i+len(":key/"):]
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	priv, ok := k.keys[id]
	return id, priv, ok
}

func (k *localKMS) answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(v)
}

func (k *localKMS) fail(w http.ResponseWriter, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(kmsError{Type: typ, Message: msg})
}
