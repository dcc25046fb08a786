package transfer_test

import (
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// FuzzCanonicalize: the canonical form is a fixed point (canonicalising it again changes
// nothing), and the fingerprint is a function of the canonical form alone, one to one: two
// spellings of one transfer share a fingerprint, two transfers never do. The
// address parser is the test double (fakes_test.go): any 56 characters after G or C, so the
// canonical form is tried with every byte a wallet might carry; internal/wiring's FuzzHandler
// fuzzes the real one.
func FuzzCanonicalize(f *testing.F) {
	const g = "GAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAWHF"
	for _, s := range [][8]string{
		{"withdraw", g, "1000.5", "USDC", "withdraw", " " + g + " ", "01000.50", "usdc"},
		{"deposit", g, "1", "EURC", "withdraw", g, "1", "EURC"},
		{"withdraw", "GAASAP26PWOLXWXZDA3V\r\n\r\nM5MUWPJPHBFUCTVTDOTC2DOI3RLXE", "1", "USDC", "withdraw", "GAASAP26PWOLXWXZDA3VM5MUWPJPHBFUCTVTDOTC2DOI3RLXEAAAA", "1", "USDC"},
		{"withdraw", "AAA\nA", "1", "USDC", "withdraw", g, "0.0000001", "USDC"},
		{"withdraw", g, "922337203685.4775807", "USDC", "withdraw", g, "922337203685.4775808", "USDC"},
		{"withdraw", "g" + g[1:], "1.0000000", " Usdc\t", "withdraw", g, "1", "USDC"},
	} {
		f.Add(s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7])
	}
	rules := transfer.Rules{Assets: []string{"USDC", "EURC"}, Addresses: addresses{}}
	f.Fuzz(func(t *testing.T, opA, walletA, amountA, assetA, opB, walletB, amountB, assetB string) {
		a, errA := rules.Canonicalize(transfer.RawRequest{OperationType: opA, WalletAddress: walletA, Amount: amountA, Asset: assetA})
		b, errB := rules.Canonicalize(transfer.RawRequest{OperationType: opB, WalletAddress: walletB, Amount: amountB, Asset: assetB})
		for _, c := range []struct {
			req transfer.Request
			err error
		}{{a, errA}, {b, errB}} {
			if c.err != nil {
				continue
			}
			again, err := rules.Canonicalize(transfer.RawRequest{OperationType: string(c.req.OperationType),
				WalletAddress: c.req.WalletAddress, Amount: c.req.Amount, Asset: c.req.Asset})
			if err != nil || again != c.req {
				t.Fatalf("canonical form %+v is not a fixed point: %+v, %v", c.req, again, err)
			}
			if again.Fingerprint() != c.req.Fingerprint() {
				t.Fatalf("one canonical form, two fingerprints: %+v", c.req)
			}
			if c.req.Stroops <= 0 {
				t.Fatalf("accepted a non-positive amount: %+v", c.req)
			}
		}
		if errA != nil || errB != nil {
			return
		}
		if (a == b) != (a.Fingerprint() == b.Fingerprint()) {
			t.Fatalf("fingerprints disagree with canonical forms: %+v %s, %+v %s", a, a.Fingerprint(), b, b.Fingerprint())
		}
	})
}
