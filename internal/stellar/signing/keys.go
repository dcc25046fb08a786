package signing

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/stellar/go-stellar-sdk/keypair"
)

// Keys are the signing keys. Vault is required; Fee and the channel keys are optional (used by
// fee bumps and channel accounts). Keys formats, logs and marshals to JSON with public
// keys only; never format the *keypair.Full values themselves (their %v shows the seed).
type Keys struct {
	// Vault signs the vault's operations (the signer of VAULT_ACCOUNT).
	Vault *keypair.Full
	// Fee pays for fee-bump transactions; nil when fee bumps are off.
	Fee *keypair.Full
	// Channels are channel accounts' keys listed in the secret.
	Channels []*keypair.Full
	// ChannelMaster is the SEP-5 master seed channel keys are derived from; empty if not set.
	ChannelMaster MasterSeed
	// VaultSigner and FeeSigner, when set, sign in place of Vault and Fee: keys this process
	// never holds (KMSSigner, SIGNER=kms; kms.go).
	VaultSigner Signer
	FeeSigner   Signer
}

// VaultKey is the key that signs the vault's operations: VaultSigner, else Vault; nil if neither.
func (k Keys) VaultKey() Signer {
	if k.VaultSigner != nil {
		return k.VaultSigner
	}
	return seedSigner(k.Vault)
}

// FeeKey is the fee account's key: FeeSigner, else Fee; nil if neither.
func (k Keys) FeeKey() Signer {
	if k.FeeSigner != nil {
		return k.FeeSigner
	}
	return seedSigner(k.Fee)
}

func signerAddress(s Signer) string {
	if s == nil {
		return ""
	}
	return s.Address()
}

// MasterSeed is secret key material (a BIP-39 seed, SEP-5). It formats as "[redacted]", and
// keeps its bytes inside a closure, so even reflection-based printing of a struct holding it in
// an unexported field (where fmt cannot call Format) shows a function address, not the bytes.
type MasterSeed struct{ b func() []byte }

// NewMasterSeed returns a MasterSeed holding a copy of b.
func NewMasterSeed(b []byte) MasterSeed {
	if len(b) == 0 {
		return MasterSeed{}
	}
	c := append([]byte(nil), b...)
	return MasterSeed{b: func() []byte { return append([]byte(nil), c...) }}
}

// Bytes returns a copy of the seed, nil if unset.
func (m MasterSeed) Bytes() []byte {
	if m.b == nil {
		return nil
	}
	return m.b()
}

// IsSet reports whether a seed is held.
func (m MasterSeed) IsSet() bool { return m.b != nil }

// String implements fmt.Stringer without revealing the seed.
func (m MasterSeed) String() string {
	if !m.IsSet() {
		return "[none]"
	}
	return "[redacted]"
}

// GoString implements fmt.GoStringer without revealing the seed.
func (m MasterSeed) GoString() string { return m.String() }

// Format implements fmt.Formatter: every verb (%v, %+v, %#v, %s, %x, ...) prints String.
func (m MasterSeed) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(m.String())) }

// MarshalJSON writes the redacted form.
func (m MasterSeed) MarshalJSON() ([]byte, error) { return json.Marshal(m.String()) }

// LogValue implements slog.LogValuer.
func (m MasterSeed) LogValue() slog.Value { return slog.StringValue(m.String()) }

func address(kp *keypair.Full) string {
	if kp == nil {
		return ""
	}
	return kp.Address()
}

// publicView is what Keys shows of itself: public keys only.
type publicView struct {
	Vault         string   `json:"vault"`
	Fee           string   `json:"fee,omitempty"`
	Channels      []string `json:"channels,omitempty"`
	ChannelMaster bool     `json:"channelMaster,omitempty"`
}

func (k Keys) public() publicView {
	v := publicView{Vault: signerAddress(k.VaultKey()), Fee: signerAddress(k.FeeKey()), ChannelMaster: k.ChannelMaster.IsSet()}
	for _, c := range k.Channels {
		v.Channels = append(v.Channels, address(c))
	}
	return v
}

// String shows the public keys: "stellar.Keys{vault=G... fee=G... channels=[G...] channelMaster=set}".
func (k Keys) String() string {
	v := k.public()
	var b strings.Builder
	b.WriteString("stellar.Keys{vault=")
	b.WriteString(v.Vault)
	if v.Fee != "" {
		b.WriteString(" fee=" + v.Fee)
	}
	if len(v.Channels) > 0 {
		b.WriteString(" channels=[" + strings.Join(v.Channels, " ") + "]")
	}
	if v.ChannelMaster {
		b.WriteString(" channelMaster=[redacted]")
	}
	b.WriteString("}")
	return b.String()
}

// GoString implements fmt.GoStringer with String.
func (k Keys) GoString() string { return k.String() }

// Format implements fmt.Formatter: every verb prints String, so %v, %+v and %#v never reach the
// seeds inside the keypairs.
func (k Keys) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(k.String())) }

// MarshalJSON writes the public keys only. Use MarshalSecret for the secret document.
func (k Keys) MarshalJSON() ([]byte, error) { return json.Marshal(k.public()) }

// LogValue implements slog.LogValuer with the public keys.
func (k Keys) LogValue() slog.Value {
	v := k.public()
	attrs := []slog.Attr{slog.String("vault", v.Vault)}
	if v.Fee != "" {
		attrs = append(attrs, slog.String("fee", v.Fee))
	}
	if len(v.Channels) > 0 {
		attrs = append(attrs, slog.Any("channels", v.Channels))
	}
	if v.ChannelMaster {
		attrs = append(attrs, slog.Bool("channelMaster", true))
	}
	return slog.GroupValue(attrs...)
}

// GenerateKeys returns random keys for a local network: a vault, a fee account and n channels.
func GenerateKeys(channels int) (Keys, error) {
	var k Keys
	var err error
	if k.Vault, err = keypair.Random(); err != nil {
		return Keys{}, err
	}
	if k.Fee, err = keypair.Random(); err != nil {
		return Keys{}, err
	}
	for range channels {
		c, err := keypair.Random()
		if err != nil {
			return Keys{}, err
		}
		k.Channels = append(k.Channels, c)
	}
	return k, nil
}
