package devstack

import (
	"context"
	"net"
	"testing"
	"time"
)

// A test that fails closes its stack on the way out (to free its ports before it reports), and
// the cleanup it registered closes the stack again: the second Close does nothing and answers as
// the first did, never panicking on the stop channels the first closed.
func TestCloseTwiceStopsOnce(t *testing.T) {
	t.Parallel()
	s := startWith(t, Options{LedgerInterval: time.Second, Getenv: envOf(map[string]string{"CHANNEL_COUNT": "0"})})
	if s.ops.submit == nil || s.ops.stream == nil {
		t.Fatal("the stack runs no submitter or stream: the stop path under test is not there")
	}
	first := s.Close()
	var second error
	panicked := func() (v any) {
		defer func() { v = recover() }()
		second = s.Close()
		return nil
	}()
	if panicked != nil {
		t.Fatalf("the second Close panicked: %v", panicked)
	}
	if second != first {
		t.Fatalf("the second Close = %v, want the first's %v", second, first)
	}
}

// A stack that fails to start frees every port it took, the listeners not yet serving included,
// so that the caller can start another on the same addresses (a test's retry, `make run` after
// a mistyped setting).
//
// Not parallel: between freeAddr and the checks no other test of this package may take the port.
func TestFailedStartFreesItsPorts(t *testing.T) {
	addr := freeAddr(t)
	env := map[string]string{"CHANNEL_COUNT": "0", "LIMITS": "not json"} // refused by config.Load
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, StellarAddr: addr, Getenv: envOf(env)})
	if err == nil {
		_ = s.Close()
		t.Fatal("Start with a malformed LIMITS succeeded")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the failed Start still holds the Stellar network's port %s: %v", addr, err)
	}
	_ = ln.Close()
}

// freeAddr is a 127.0.0.1 address with a port free when it returns.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}
