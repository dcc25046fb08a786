package logtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
)

func TestFindSecrets(t *testing.T) {
	kp := keypair.MustRandom()
	mangled := "S" + strings.Repeat("A", 55)
	out := []byte(strings.Join([]string{
		`{"msg":"ok","account":"` + kp.Address() + `"}`,
		`{"msg":"leak","seed":"` + kp.Seed() + `"}`,
		`{"msg":"mangled","v":"x` + mangled + `y"}`,
		`{"msg":"inside a longer run","v":"A` + kp.Seed() + `"}`,
		`{"msg":"hex","h":"` + strings.Repeat("ab", 32) + `"}`,
	}, "\n"))
	got := logtest.FindSecrets(out)
	if len(got) != 2 || got[0].Line != 2 || !got[0].ValidSeed || got[0].Prefix != kp.Seed()[:4] || got[1].Line != 3 || got[1].ValidSeed {
		t.Fatalf("FindSecrets = %+v, want a valid seed on line 2 and a seed-shaped string on line 3", got)
	}
	got = logtest.FindSecrets([]byte(`"` + mangled + `"`))
	if len(got) != 1 || got[0].ValidSeed {
		t.Fatalf("a seed-shaped string: %+v, want one finding with ValidSeed false", got)
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errors []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}

func TestAssertNoSecretsFailsOnALeakWithoutRepeatingIt(t *testing.T) {
	kp := keypair.MustRandom()
	r := &recorder{TB: t}
	logtest.AssertNoSecrets(r, []byte("seed="+kp.Seed()))
	if len(r.errors) != 1 {
		t.Fatalf("%d failures, want 1", len(r.errors))
	}
	r = &recorder{TB: t}
	logtest.AssertNoSecrets(r, []byte("account="+kp.Address()))
	if len(r.errors) != 0 {
		t.Fatalf("a public key was reported: %v", r.errors)
	}
}

func TestNewCapturesAndScans(t *testing.T) {
	log, buf := logtest.New(t)
	log.InfoContext(context.Background(), "hello", "account", keypair.MustRandom().Address())
	if !strings.Contains(string(buf.Bytes()), `"msg":"hello"`) {
		t.Fatalf("captured %q", buf.Bytes())
	}
}
