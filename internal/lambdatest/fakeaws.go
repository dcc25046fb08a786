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

// PutEvent is one entry EventBridge accepted.
type PutEvent struct {
	EventBusName, Source, DetailType, Detail string
}

// EventBridge is a fake of EventBridge's PutEvents (AWS JSON 1.1: POST / with X-Amz-Target:
// AWSEvents.PutEvents), enough for the AWS SDK's client. Point a function at it with
// AWS_ENDPOINT_URL_EVENTBRIDGE. An entry for a bus it does not hold is refused in the answer
// (ErrorCode), not by the request: PutEvents answers per entry, and a function must read it.
type EventBridge struct {
	mu       sync.Mutex
	buses    map[string]bool
	accepted []PutEvent
}

// NewEventBridge returns a fake holding the buses (names).
func NewEventBridge(buses ...string) *EventBridge {
	b := &EventBridge{buses: map[string]bool{}}
	for _, n := range buses {
		b.buses[n] = true
	}
	return b
}

// Accepted returns the entries accepted so far.
func (b *EventBridge) Accepted() []PutEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]PutEvent(nil), b.accepted...)
}

// ServeHTTP answers PutEvents; any other operation is refused.
func (b *EventBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		awsJSONError(w, http.StatusBadRequest, "UnknownOperationException", "only PutEvents is faked")
		return
	}
	var in struct{ Entries []PutEvent }
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil || len(in.Entries) == 0 || len(in.Entries) > 10 {
		awsJSONError(w, http.StatusBadRequest, "ValidationException", "malformed request, or not 1 to 10 entries")
		return
	}
	type result struct {
		EventID      string `json:"EventId,omitempty"`
		ErrorCode    string `json:"ErrorCode,omitempty"`
		ErrorMessage string `json:"ErrorMessage,omitempty"`
	}
	out := struct {
		FailedEntryCount int
		Entries          []result
	}{}
	b.mu.Lock()
	for _, e := range in.Entries {
		if !b.buses[e.EventBusName] {
			out.FailedEntryCount++
			out.Entries = append(out.Entries, result{ErrorCode: "NotAuthorized", ErrorMessage: "no such event bus"})
			continue
		}
		b.accepted = append(b.accepted, e)
		out.Entries = append(out.Entries, result{EventID: "event-" + strconv.Itoa(len(b.accepted))})
	}
	b.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
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
