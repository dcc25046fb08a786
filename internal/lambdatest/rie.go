// Package lambdatest runs the functions' real bootstrap binaries the way Lambda does, under the AWS
// Lambda Runtime Interface Emulator (aws-lambda-rie, which needs no container for a bootstrap
// built for this machine), and fakes the AWS APIs a function reaches besides DynamoDB: Secrets
// Manager's GetSecretValue, SNS's Publish and EventBridge's PutEvents, each on 127.0.0.1.
//
// Build compiles a bootstrap exactly as the Makefile does (CGO_ENABLED=0, -tags lambda.norpc,
// -trimpath, -s -w) for any GOOS/GOARCH; Start runs one under the emulator; Invoke posts an event
// to the emulator's invoke endpoint (the Lambda Invoke API's path); InitReport and Reports read
// the emulator's INIT REPORT and REPORT lines.
package lambdatest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// BuildFlags are the flags of every Lambda build (the Makefile's LAMBDA_GOFLAGS).
var BuildFlags = []string{"-trimpath", "-tags", "lambda.norpc", "-ldflags=-s -w -buildid="}

// Build compiles the main package pkg (e.g. "./functions/api", relative to dir) into out for
// goos/goarch with CGO disabled, and returns the binary's size in bytes. The go command is found
// on PATH. Errors carry the compiler's output.
func Build(ctx context.Context, dir, pkg, out, goos, goarch string) (int64, error) {
	gocmd, err := exec.LookPath("go")
	if err != nil {
		return 0, fmt.Errorf("lambdatest: the go command: %w", err)
	}
	args := append([]string{"build"}, BuildFlags...)
	args = append(args, "-o", out, pkg)
	cmd := exec.CommandContext(ctx, gocmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		return 0, fmt.Errorf("lambdatest: go build %s for %s/%s: %w\n%s", pkg, goos, goarch, err, b)
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, fmt.Errorf("lambdatest: %w", err)
	}
	return fi.Size(), nil
}

// Options configure Start.
type Options struct {
	// RIE is the aws-lambda-rie executable; Bootstrap the function's binary.
	RIE, Bootstrap string
	// Env is the function's whole environment ("KEY=value"); nothing is inherited from the test
	// process, so no developer's AWS credentials or settings leak in. Start adds PATH, the
	// emulator's function name and timeout, and empty AWS config files.
	Env []string
	// FunctionName is AWS_LAMBDA_FUNCTION_NAME (default "function").
	FunctionName string
	// Timeout is the function's timeout (AWS_LAMBDA_FUNCTION_TIMEOUT), default 30 s.
	Timeout time.Duration
}

// Emulator is a running aws-lambda-rie with one function.
type Emulator struct {
	url  string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	err  error // the process's exit, once done is closed
}

// Start runs the emulator on a free 127.0.0.1 port and returns once it accepts connections. The
// function's init runs on the first Invoke, as on Lambda's first request.
func Start(ctx context.Context, o Options) (*Emulator, error) {
	if o.FunctionName == "" {
		o.FunctionName = "function"
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	// The emulator's own address, and the Runtime API's (default 127.0.0.1:9001, which would keep
	// two emulators from running at once).
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	runtimeAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	home, err := os.MkdirTemp("", "lambdatest-")
	if err != nil {
		return nil, fmt.Errorf("lambdatest: %w", err)
	}
	cmd := exec.Command(o.RIE, "--runtime-interface-emulator-address", addr, "--runtime-api-address", runtimeAddr, o.Bootstrap)
	cmd.Dir = filepath.Dir(o.Bootstrap)
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"AWS_CONFIG_FILE=" + filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_LAMBDA_FUNCTION_NAME=" + o.FunctionName,
		"AWS_LAMBDA_FUNCTION_TIMEOUT=" + strconv.Itoa(int(o.Timeout/time.Second)),
	}, o.Env...)
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, so Close ends the emulator and the bootstrap it started, and nothing else.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(home)
		return nil, fmt.Errorf("lambdatest: starting %s: %w", o.RIE, err)
	}
	e := &Emulator{url: "http://" + addr, cmd: cmd, log: log, done: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		_ = os.RemoveAll(home)
		close(e.done)
	}()
	if err := e.waitListening(ctx, addr); err != nil {
		_ = e.Close()
		return nil, err
	}
	return e, nil
}

// waitListening dials addr until the emulator accepts, it exits, or ctx ends.
func (e *Emulator) waitListening(ctx context.Context, addr string) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("lambdatest: the emulator did not listen on %s: %w\n%s", addr, ctx.Err(), e.log.String())
		case <-e.done:
			return fmt.Errorf("lambdatest: the emulator exited: %v\n%s", e.err, e.log.String())
		case <-tick.C:
		}
	}
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("lambdatest: a free port: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// Response is the emulator's answer to one invocation: HTTP 200 with the handler's JSON result
// (or its error object, {"errorType","errorMessage"}), or a 5xx when the runtime failed (for
// example init failed).
type Response struct {
	Status int
	Body   []byte
}

// invocationDone matches the emulator's last line about an invocation: its REPORT, or the failure
// of an invocation whose runtime died (init failed).
var invocationDone = regexp.MustCompile(`(?m)^REPORT RequestId: |Invoke DONE failed`)

// Invoke sends payload as one event and waits for the answer, and for the emulator's last line
// about it, so that Log, InitDuration and Reports include everything the invocation wrote.
func (e *Emulator) Invoke(ctx context.Context, payload []byte) (Response, error) {
	before := len(invocationDone.FindAllStringIndex(e.log.String(), -1))
	resp, err := e.invoke(ctx, payload)
	if err != nil {
		return resp, err
	}
	if err := e.log.waitFor(ctx, func(log string) bool {
		return len(invocationDone.FindAllStringIndex(log, -1)) > before
	}); err != nil {
		return resp, fmt.Errorf("lambdatest: waiting for the emulator's report: %w\n%s", err, e.log.String())
	}
	return resp, nil
}

func (e *Emulator) invoke(ctx context.Context, payload []byte) (Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/2015-03-31/functions/function/invocations", bytes.NewReader(payload))
	if err != nil {
		return Response{}, fmt.Errorf("lambdatest: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return Response{}, fmt.Errorf("lambdatest: invoke: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return Response{}, fmt.Errorf("lambdatest: invoke: reading the answer: %w", err)
	}
	return Response{Status: resp.StatusCode, Body: body}, nil
}

// Log returns everything the emulator and the function wrote so far (stdout and stderr).
func (e *Emulator) Log() string { return e.log.String() }

var (
	initReport = regexp.MustCompile(`INIT REPORT\s*\(durationMs:\s*([0-9.]+)\)`)
	report     = regexp.MustCompile(`(?m)^REPORT RequestId: (\S+)\t(?:.*\t)?Duration: ([0-9.]+) ms`)
)

// InitDuration is the first INIT REPORT's duration: the function's init (process start to its
// first request for an event). ok is false while there is none.
func (e *Emulator) InitDuration() (d time.Duration, ok bool) {
	m := initReport.FindStringSubmatch(e.log.String())
	if m == nil {
		return 0, false
	}
	return msDuration(m[1]), true
}

// Report is one REPORT line: an invocation's request ID and duration.
type Report struct {
	RequestID string
	Duration  time.Duration
}

// Reports returns the REPORT lines so far, in order.
func (e *Emulator) Reports() []Report {
	var out []Report
	for _, m := range report.FindAllStringSubmatch(e.log.String(), -1) {
		out = append(out, Report{RequestID: m[1], Duration: msDuration(m[2])})
	}
	return out
}

func msDuration(s string) time.Duration {
	f, _ := strconv.ParseFloat(s, 64)
	return time.Duration(f * float64(time.Millisecond))
}

// Close stops the emulator and its function (SIGTERM to their process group, SIGKILL after 5 s).
func (e *Emulator) Close() error {
	select {
	case <-e.done:
		return nil
	default:
	}
	pgid := e.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-e.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-e.done
	}
	var exit *exec.ExitError
	if e.err != nil && !errors.As(e.err, &exit) {
		return fmt.Errorf("lambdatest: emulator: %w", e.err)
	}
	return nil
}

// syncBuffer is a bytes.Buffer safe for the process's writers and the test's readers; each write
// wakes those waiting for a change.
type syncBuffer struct {
	mu      sync.Mutex
	b       bytes.Buffer
	changed chan struct{}
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	return s.b.Write(p)
}

// waitFor returns once cond holds for the buffer's content, or ctx ends.
func (s *syncBuffer) waitFor(ctx context.Context, cond func(string) bool) error {
	for {
		s.mu.Lock()
		if cond(s.b.String()) {
			s.mu.Unlock()
			return nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
