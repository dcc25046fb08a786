package devstack

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The local stack's EventBridge: the alert function publishes its settlement events (README.md,
// "Settlement events") with the AWS SDK's real eventbridge client, pointed at PutEvents served
// here on the Lambda Invoke API's address, so the code path is the one deployed. Each event is
// printed on the console and served as server-sent events (the WHATWG HTML standard's
// "Server-sent events": text/event-stream, one "id", "event" and "data" field per event) at
// GET /_events on the same address, so a developer can watch them:
//
//	curl -N http://127.0.0.1:3001/_events            # from now on
//	curl -N 'http://127.0.0.1:3001/_events?since=0'  # the last 256 events first
//
// A client reconnecting with Last-Event-ID gets the events it missed (of the last 256). No rule
// or target runs here: subscribers are the stream's readers.

// localBus is the bus the local alert function publishes to (EVENT_BUS_NAME).
const localBus = "stellar-transfers"

// eventBacklog is how many events /_events keeps for ?since= and Last-Event-ID.
const eventBacklog = 256

// maxPutEventsBody bounds a PutEvents request (EventBridge's limit is 256 KiB of entries).
const maxPutEventsBody = 1 << 20

// busEvent is one event as EventBridge delivers it to a rule's target ("Amazon EventBridge
// events", the event structure: version, id, detail-type, source, account, time, region,
// resources, detail).
type busEvent struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

type eventBus struct {
	name    string
	console io.Writer
	log     *slog.Logger
	// forward, when set, also receives each event (its id and JSON): the local webhook.
	forward func(id string, event []byte)

	mu      sync.Mutex
	seq     int
	backlog []sseEvent
	subs    map[chan sseEvent]struct{}
	closed  chan struct{}
	once    sync.Once
}

type sseEvent struct {
	seq  int
	kind string
	data []byte
}

func newEventBus(name string, console io.Writer, log *slog.Logger) *eventBus {
	if console == nil {
		console = io.Discard
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &eventBus{name: name, console: console, log: log, subs: map[chan sseEvent]struct{}{}, closed: make(chan struct{})}
}

// close ends every /_events stream (an open stream would hold the server's Shutdown).
func (b *eventBus) close() { b.once.Do(func() { close(b.closed) }) }

// putEvents serves PutEvents (AWS JSON 1.1: POST / with X-Amz-Target AWSEvents.PutEvents).
// Entries go to localBus only; a detail that is not a JSON object is refused per entry
// (MalformedDetail), as EventBridge does.
func (b *eventBus) putEvents(w http.ResponseWriter, r *http.Request) {
	if target := r.Header.Get("X-Amz-Target"); target != "AWSEvents.PutEvents" {
		jsonError(w, http.StatusBadRequest, "UnknownOperationException", "only AWSEvents.PutEvents is served here, not "+strconv.Quote(target))
		return
	}
	var in struct {
		Entries []struct {
			Source, DetailType, Detail, EventBusName string
			Time                                     *float64 // epoch seconds (AWS JSON timestamps)
			Resources                                []string
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPutEventsBody+1))
	if err != nil || len(body) > maxPutEventsBody || json.Unmarshal(body, &in) != nil {
		jsonError(w, http.StatusBadRequest, "ValidationException", "malformed PutEvents request")
		return
	}
	if len(in.Entries) < 1 || len(in.Entries) > 10 {
		jsonError(w, http.StatusBadRequest, "ValidationException", "Entries must hold 1 to 10 entries")
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
	}{Entries: []result{}}
	for _, e := range in.Entries {
		bus := e.EventBusName
		if i := strings.LastIndex(bus, ":event-bus/"); i >= 0 {
			bus = bus[i+len(":event-bus/"):]
		}
		var detail map[string]any
		switch {
		case bus != b.name:
			out.Entries = append(out.Entries, result{ErrorCode: "NotAuthorized", ErrorMessage: "no event bus " + strconv.Quote(e.EventBusName) + " here (the local bus is " + b.name + ")"})
		case e.Source == "" || e.DetailType == "":
			out.Entries = append(out.Entries, result{ErrorCode: "InvalidArgument", ErrorMessage: "Source and DetailType are required"})
		case json.Unmarshal([]byte(e.Detail), &detail) != nil || detail == nil:
			out.Entries = append(out.Entries, result{ErrorCode: "MalformedDetail", ErrorMessage: "Detail is not a JSON object"})
		default:
			at := time.Now()
			if e.Time != nil && !math.IsNaN(*e.Time) && !math.IsInf(*e.Time, 0) {
				sec, frac := math.Modf(*e.Time)
				at = time.Unix(int64(sec), int64(frac*1e9))
			}
			id := newEventID()
			resources := e.Resources
			if resources == nil {
				resources = []string{}
			}
			b.publish(busEvent{Version: "0", ID: id, DetailType: e.DetailType, Source: e.Source, Account: "000000000000",
				Time: at.UTC().Format(time.RFC3339), Region: "us-east-1", Resources: resources, Detail: json.RawMessage(e.Detail)})
			out.Entries = append(out.Entries, result{EventID: id})
			continue
		}
		out.FailedEntryCount++
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// publish prints ev on the console and sends it to every /_events stream.
func (b *eventBus) publish(ev busEvent) {
	data, err := json.Marshal(ev)
	if err != nil {
		return
	}
	var compact bytes.Buffer
	if json.Compact(&compact, data) == nil {
		data = compact.Bytes()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	e := sseEvent{seq: b.seq, kind: ev.DetailType, data: data}
	b.backlog = append(b.backlog, e)
	if len(b.backlog) > eventBacklog {
		b.backlog = b.backlog[len(b.backlog)-eventBacklog:]
	}
	fmt.Fprintf(b.console, "event %s: %s\n", ev.DetailType, data)
	if b.forward != nil {
		b.forward(ev.ID, data)
	}
	for ch := range b.subs {
		select {
		case ch <- e:
		default:
			b.log.Warn("local events: a slow /_events reader missed an event", "id", e.seq)
		}
	}
}

// stream serves GET /_events as text/event-stream until the client goes or the stack stops.
func (b *eventBus) stream(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	since := -1
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		since, _ = strconv.Atoi(v)
	} else if v := r.URL.Query().Get("since"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			http.Error(w, "since must be an event id (0 for the whole backlog)", http.StatusBadRequest)
			return
		}
		since = n
	}
	ch := make(chan sseEvent, 64)
	b.mu.Lock()
	var replay []sseEvent
	if since >= 0 {
		for _, e := range b.backlog {
			if e.seq > since {
				replay = append(replay, e)
			}
		}
	}
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, ": settlement events of the local stack (README.md, \"Settlement events\")\n\n")
	for _, e := range replay {
		writeSSE(w, e)
	}
	flusher.Flush()
	for {
		select {
		case e := <-ch:
			writeSSE(w, e)
			flusher.Flush()
		case <-r.Context().Done():
			return
		case <-b.closed:
			return
		}
	}
}

func writeSSE(w io.Writer, e sseEvent) {
	fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.seq, e.kind, e.data)
}

// newEventID is an event ID shaped as EventBridge's (a UUID).
func newEventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// jsonError answers an AWS JSON 1.1 error (the SDK reads the type from X-Amzn-Errortype).
func jsonError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-Errortype", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
