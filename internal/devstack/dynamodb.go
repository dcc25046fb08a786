package devstack

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// tableLister adds ListTables to the embedded DynamoDB (minidyn's server answers it "unsupported
// operation"), so `aws dynamodb list-tables --endpoint-url http://127.0.0.1:8000` works as it does
// against DynamoDB. minidyn does not expose its tables, so the lister keeps their names itself:
// every CreateTable that succeeds adds one, every DeleteTable that succeeds removes it. Every other
// request goes to minidyn unchanged.
//
// The answer is DynamoDB's ListTables (API Reference, "ListTables"): TableNames in ascending
// order after ExclusiveStartTableName, at most Limit (1 to 100, default 100) of them, and
// LastEvaluatedTableName when more follow.
type tableLister struct {
	next http.Handler

	mu     sync.Mutex
	tables map[string]bool
}

func newTableLister(next http.Handler) *tableLister {
	return &tableLister{next: next, tables: map[string]bool{}}
}

// operation is the DynamoDB action an X-Amz-Target header names ("DynamoDB_20120810.ListTables").
func operation(r *http.Request) string {
	t := r.Header.Get("X-Amz-Target")
	return t[strings.LastIndexByte(t, '.')+1:]
}

func (l *tableLister) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := operation(r)
	if r.Method != http.MethodPost || (op != "ListTables" && op != "CreateTable" && op != "DeleteTable") {
		l.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		dynamoError(w, "request body: "+err.Error())
		return
	}
	var in struct {
		TableName               string
		ExclusiveStartTableName string
		Limit                   *int
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			dynamoError(w, "request body: "+err.Error())
			return
		}
	}
	if op == "ListTables" {
		l.list(w, in.ExclusiveStartTableName, in.Limit)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	l.next.ServeHTTP(rec, r)
	if rec.status != http.StatusOK || in.TableName == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if op == "CreateTable" {
		l.tables[in.TableName] = true
	} else {
		delete(l.tables, in.TableName)
	}
}

func (l *tableLister) list(w http.ResponseWriter, after string, limit *int) {
	n := 100
	if limit != nil {
		if *limit < 1 || *limit > 100 {
			dynamoError(w, "1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value between 1 and 100")
			return
		}
		n = *limit
	}
	l.mu.Lock()
	var names []string
	for name := range l.tables {
		if name > after {
			names = append(names, name)
		}
	}
	l.mu.Unlock()
	slices.Sort(names)
	out := struct {
		TableNames             []string
		LastEvaluatedTableName string `json:",omitempty"`
	}{TableNames: names}
	if len(names) > n {
		out.TableNames = names[:n]
		out.LastEvaluatedTableName = names[n-1]
	}
	if out.TableNames == nil {
		out.TableNames = []string{}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	_ = json.NewEncoder(w).Encode(out)
}

// dynamoError answers a DynamoDB ValidationException, as DynamoDB shapes a client error.
func dynamoError(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"__type": "com.amazonaws.dynamodb.v20120810#ValidationException", "message": msg})
}

// statusRecorder notes the status minidyn answered with.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}
