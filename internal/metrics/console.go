package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Console returns a writer for a terminal in place of CloudWatch Logs: each EMF line written to
// it (one whole line per Write, as Writer writes them) is shown as what it measures,
//
//	metric transfer_orchestration_balance=10000 None account=vault asset=XLM
//
// one line per metric, dimensions sorted, instead of the JSON whose "level":"FATAL" is only there
// for Lambda's log-level filtering (see Level). A line that is not EMF is passed through as it
// is. The local stack (internal/devstack's command) shows its functions' metrics this way.
func Console(w io.Writer) io.Writer { return &console{w: w} }

type console struct {
	mu sync.Mutex
	w  io.Writer
}

func (c *console) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(p), "\n") {
		if line == "" {
			continue
		}
		if s, ok := consoleLine(strings.TrimSuffix(line, "\n")); ok {
			out.WriteString(s)
		} else {
			out.WriteString(line)
		}
	}
	if _, err := io.WriteString(c.w, out.String()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// consoleLine renders one EMF line; ok is false for a line that is not one.
func consoleLine(line string) (string, bool) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(line), &fields); err != nil {
		return "", false
	}
	var meta metadata
	raw, ok := fields["_aws"]
	if !ok || json.Unmarshal(raw, &meta) != nil || len(meta.CloudWatchMetrics) == 0 {
		return "", false
	}
	dims := map[string]bool{}
	var b strings.Builder
	for _, d := range meta.CloudWatchMetrics {
		for _, set := range d.Dimensions {
			for _, k := range set {
				dims[k] = true
			}
		}
	}
	names := make([]string, 0, len(dims))
	for k := range dims {
		names = append(names, k)
	}
	sort.Strings(names)
	var tail strings.Builder
	for _, k := range names {
		var v any
		if json.Unmarshal(fields[k], &v) == nil {
			fmt.Fprintf(&tail, " %s=%v", k, v)
		}
	}
	for _, d := range meta.CloudWatchMetrics {
		for _, m := range d.Metrics {
			fmt.Fprintf(&b, "metric %s=%s %s%s\n", m.Name, string(fields[m.Name]), m.Unit, tail.String())
		}
	}
	return b.String(), true
}
