package lambdatest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// SecretsManager is a fake of Secrets Manager's GetSecretValue (JSON 1.1 protocol: POST / with
// X-Amz-Target: secretsmanager.GetSecretValue), enough for the AWS SDK's client. Point a function
// at it with AWS_ENDPOINT_URL_SECRETS_MANAGER. It never logs what it holds.
type SecretsManager struct {
	mu      sync.Mutex
	secrets map[string]string
	reads   int
}

// NewSecretsManager returns a fake holding secrets (secret ID or ARN -> SecretString).
func NewSecretsManager(secrets map[string]string) *SecretsManager {
	m := make(map[string]string, len(secrets))
	for k, v := range secrets {
		m[k] = v
	}
	return &SecretsManager{secrets: m}
}

// Reads is how many GetSecretValue calls found their secret.
func (s *SecretsManager) Reads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// ServeHTTP answers GetSecretValue; any other operation is refused.
func (s *SecretsManager) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" {
		awsJSONError(w, http.StatusBadRequest, "UnknownOperationException", "only GetSecretValue is faked")
		return
	}
	var in struct{ SecretId string }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<16)).Decode(&in); err != nil {
		awsJSONError(w, http.StatusBadRequest, "InvalidRequestException", "malformed request")
		return
	}
	s.mu.Lock()
	v, ok := s.secrets[in.SecretId]
	if ok {
		s.reads++
	}
	s.mu.Unlock()
	if !ok {
		awsJSONError(w, http.StatusBadRequest, "ResourceNotFoundException", "Secrets Manager can't find the specified secret.")
		return
	}
	name := in.SecretId
	if i := strings.LastIndex(name, ":secret:"); i >= 0 {
		name = name[i+len(":secret:"):]
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"ARN": in.SecretId, "Name": name, "SecretString": v,
		"VersionId": "00000000-0000-0000-0000-000000000001", "VersionStages": []string{"AWSCURRENT"},
		"CreatedDate": 1.7e9,
	})
}

func awsJSONError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

// Publication is one SNS Publish call.
type Publication struct {
	TopicARN, Subject, Message string
}

// SNS is a fake of SNS's Publish (AWS Query protocol: a form-encoded POST, an XML answer), enough
// for the AWS SDK's client. Point a function at it with AWS_ENDPOINT_URL_SNS. Publishing to a
// topic it does not hold fails with NotFound, as SNS does.
type SNS struct {
	mu        sync.Mutex
	topics    map[string]bool
	published []Publication
}

// NewSNS returns a fake holding the topics (ARNs).
func NewSNS(topics ...string) *SNS {
	s := &SNS{topics: map[string]bool{}}
	for _, t := range topics {
		s.topics[t] = true
	}
	return s
}

// Published returns the Publish calls so far.
func (s *SNS) Published() []Publication {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Publication(nil), s.published...)
}

// ServeHTTP answers Publish; any other action is refused.
func (s *SNS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil || r.PostForm.Get("Action") != "Publish" || r.PostForm.Get("TopicArn") == "" {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidAction</Code><Message>only Publish with a TopicArn is faked</Message></Error><RequestId>fake</RequestId></ErrorResponse>`)
		return
	}
	s.mu.Lock()
	if !s.topics[r.PostForm.Get("TopicArn")] {
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `<ErrorResponse><Error><Type>Sender</Type><Code>NotFound</Code><Message>Topic does not exist</Message></Error><RequestId>fake</RequestId></ErrorResponse>`)
		return
	}
	s.published = append(s.published, Publication{TopicARN: r.PostForm.Get("TopicArn"), Subject: r.PostForm.Get("Subject"), Message: r.PostForm.Get("Message")})
	n := len(s.published)
	s.mu.Unlock()
	type result struct {
		MessageID string `xml:"PublishResult>MessageId"`
		RequestID string `xml:"ResponseMetadata>RequestId"`
	}
	w.Header().Set("Content-Type", "text/xml")
	_ = xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"PublishResponse"`
		result
	}{result: result{MessageID: "message-" + strconv.Itoa(n), RequestID: "fake"}})
}

// SQS is a fake of SQS's SendMessage (the AWS JSON 1.0 protocol the SDK speaks: X-Amz-Target
// AmazonSQS.SendMessage), enough for the AWS SDK's client, which checks the answer's MD5 of the
// body. Point a function at it with AWS_ENDPOINT_URL_SQS. Any other operation is refused.
type SQS struct {
	mu   sync.Mutex
	sent []string
}

// Sent returns the bodies sent so far, in order.
func (s *SQS) Sent() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.sent...)
}

// ServeHTTP answers SendMessage.
func (s *SQS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in struct {
		QueueURL    string `json:"QueueUrl"`
		MessageBody string `json:"MessageBody"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if r.Header.Get("X-Amz-Target") != "AmazonSQS.SendMessage" || json.NewDecoder(r.Body).Decode(&in) != nil || in.QueueURL == "" || in.MessageBody == "" {
		awsJSONError(w, http.StatusBadRequest, "InvalidAction", "only SendMessage with a QueueUrl and a body is faked")
		return
	}
	s.mu.Lock()
	s.sent = append(s.sent, in.MessageBody)
	n := len(s.sent)
	s.mu.Unlock()
	sum := md5.Sum([]byte(in.MessageBody))
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(map[string]string{"MessageId": "message-" + strconv.Itoa(n), "MD5OfMessageBody": hex.EncodeToString(sum[:])})
}
