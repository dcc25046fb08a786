package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// The receivers README.md shows (testdata/verify.js, testdata/verify.py: no dependency beyond
// each language's standard library) accept what Sign sends and refuse the forgeries and replays a
// receiver must refuse.
func TestReceiversInJavaScriptAndPythonAcceptOurSignaturesAndRefuseForgeries(t *testing.T) {
	sg, err := ParseSecrets(secretB + " " + secretA)
	if err != nil {
		t.Fatal(err)
	}
	body := eventBody(eventID)
	ts, sig, err := sg.Sign(eventID, signedAt, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{HeaderID: eventID, HeaderTimestamp: ts, HeaderSignature: sig}
	with := func(k, v string) map[string]string {
		h := map[string]string{}
		for a, b := range headers {
			h[a] = b
		}
		h[k] = v
		return h
	}
	now := signedAt.Unix()
	cases := []struct {
		name    string
		secret  string
		headers map[string]string
		body    string
		now     int64
		want    string
	}{
		{"as sent", secretA, headers, body, now, "ok"},
		{"the other secret of the rotation", secretB, headers, body, now, "ok"},
		{"four minutes late", secretA, headers, body, now + 240, "ok"},
		{"a body changed by one byte", secretA, headers, strings.Replace(body, "12.5", "92.5", 1), now, "no matching signature"},
		{"another secret", secretOf('z', 32), headers, body, now, "no matching signature"},
		{"the same delivery six minutes later", secretA, headers, body, now + 360, "timestamp outside tolerance"},
		{"a timestamp moved to now", secretA, with(HeaderTimestamp, fmt.Sprint(now+360)), body, now + 360, "no matching signature"},
		{"another id", secretA, with(HeaderID, strings.Repeat("0", 32)), body, now, "no matching signature"},
		{"no signature", secretA, with(HeaderSignature, ""), body, now, "missing webhook headers"},
	}
	for _, lang := range []struct{ name, cmd, script string }{{"javascript", "node", "testdata/verify.js"}, {"python", "python3", "testdata/verify.py"}} {
		path, err := exec.LookPath(lang.cmd)
		if err != nil {
			t.Errorf("%s: %s is not installed (the README's receivers are tested with it): %v", lang.name, lang.cmd, err)
			continue
		}
		for _, c := range cases {
			in, _ := json.Marshal(map[string]any{"headers": c.headers, "body": c.body})
			cmd := exec.Command(path, lang.script)
			cmd.Env = append(cmd.Environ(), "WEBHOOK_SECRET="+c.secret, fmt.Sprintf("WEBHOOK_NOW=%d", c.now))
			cmd.Stdin = bytes.NewReader(in)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s %s: %v: %s", lang.name, c.name, err, out)
				continue
			}
			if got := strings.TrimSpace(string(out)); got != c.want {
				t.Errorf("%s, %s: %q, want %q", lang.name, c.name, got, c.want)
			}
		}
	}
}
