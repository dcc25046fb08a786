package signing

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/strictjson"
)

// The signing secret (README.md, "Configuration") is one JSON document, the SecretString of the AWS
// Secrets Manager secret named by SIGNING_SECRET_ARN:
//
//	{
//	  "vaultSeed":         "S...",          // required: signs the vault's payments
//	  "feeSeed":           "S...",          // optional: pays fee-bump transactions (CAP-15)
//	  "channelSeeds":      ["S...", "S..."], // optional: channel accounts' keys
//	  "channelMasterSeed": "<hex>"          // optional: SEP-5 master seed, the 16 to 64 byte BIP-39
//	                                        // seed in hex, to derive channel keys
//	}
//
// Seeds are ed25519 secret seeds in strkey form (SEP-23, "S..."). The document is read with
// internal/strictjson, so it has one meaning or none: an unknown field (a misspelt one, or one in
// another case such as "VAULTSEED") is refused rather than a key silently dropped or taken, and a
// field named twice is refused rather than the last value loaded. Error messages name fields,
// never values.

// secretDocument is the JSON form of the signing secret.
type secretDocument struct {
	VaultSeed         string   `json:"vaultSeed,omitempty"`
	FeeSeed           string   `json:"feeSeed,omitempty"`
	ChannelSeeds      []string `json:"channelSeeds,omitempty"`
	ChannelMasterSeed string   `json:"channelMasterSeed,omitempty"`
}

// maxQuotedField is the longest unknown field name (quotes included) a ParseKeys error quotes:
// shorter than a secret seed (56 characters).
const maxQuotedField = 32

// ErrBadSecret is wrapped by every ParseKeys error.
var ErrBadSecret = errors.New("stellar: signing secret is invalid")

func badSecret(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadSecret, fmt.Sprintf(format, args...))
}

// ParseKeys parses the signing secret document (see the format above). Errors wrap ErrBadSecret
// and name the offending field, never its value.
func ParseKeys(doc []byte) (Keys, error) { return parseKeys(doc, false) }

// ParseChannelKeys parses the signing secret of SIGNER=kms, which holds channel keys only
// (channelSeeds, channelMasterSeed): the vault's and the fee account's keys are in KMS, so a
// vaultSeed or feeSeed here is refused rather than left lying around. Errors wrap ErrBadSecret.
func ParseChannelKeys(doc []byte) (Keys, error) { return parseKeys(doc, true) }

func parseKeys(doc []byte, channelsOnly bool) (Keys, error) {
	var d secretDocument
	if err := strictjson.Decode(doc, &d); err != nil {
		return Keys{}, secretDocumentError(err)
	}
	var k Keys
	var err error
	if channelsOnly {
		if d.VaultSeed != "" || d.FeeSeed != "" {
			return Keys{}, badSecret("with SIGNER=kms the secret holds channel keys only; remove vaultSeed and feeSeed (the keys are in KMS)")
		}
	} else if d.VaultSeed == "" {
		return Keys{}, badSecret("vaultSeed is required")
	}
	if d.VaultSeed != "" {
		if k.Vault, err = parseSeed("vaultSeed", d.VaultSeed); err != nil {
			return Keys{}, err
		}
	}
	if d.FeeSeed != "" {
		if k.Fee, err = parseSeed("feeSeed", d.FeeSeed); err != nil {
			return Keys{}, err
		}
	}
	seen := map[string]bool{}
	for i, s := range d.ChannelSeeds {
		kp, err := parseSeed(fmt.Sprintf("channelSeeds[%d]", i), s)
		if err != nil {
			return Keys{}, err
		}
		if seen[kp.Address()] {
			return Keys{}, badSecret("channelSeeds[%d] repeats an earlier channel (%s)", i, kp.Address())
		}
		seen[kp.Address()] = true
		k.Channels = append(k.Channels, kp)
	}
	if d.ChannelMasterSeed != "" {
		b, err := hex.DecodeString(d.ChannelMasterSeed)
		if err != nil || len(b) < 16 || len(b) > 64 {
			return Keys{}, badSecret("channelMasterSeed must be 16 to 64 bytes in hex")
		}
		k.ChannelMaster = NewMasterSeed(b)
	}
	return k, nil
}

// secretDocumentError is a strictjson refusal of the secret document as an ErrBadSecret. The
// messages are written here rather than taken from strictjson: theirs may quote a character of the
// input (a syntax error) or a field name up to strictjson.MaxQuotedName bytes, long enough to be a
// seed pasted as a name; these quote a name only when it is shorter than any seed
// (maxQuotedField) and never quote input.
func secretDocumentError(err error) error {
	const fields = "vaultSeed, feeSeed, channelSeeds, channelMasterSeed"
	var se *strictjson.Error
	if !errors.As(err, &se) {
		return badSecret("not a JSON object")
	}
	name := func() string {
		if q := fmt.Sprintf("%q", se.Field); len(q) <= maxQuotedField {
			return q
		}
		return fmt.Sprintf("(a name of %d bytes, not shown)", len(se.Field))
	}
	switch se.Kind {
	case strictjson.KindEmpty:
		return badSecret("empty: not a JSON object; the fields are %s", fields)
	case strictjson.KindSyntax:
		return badSecret("not valid JSON (at byte %d)", se.Offset)
	case strictjson.KindTruncated:
		return badSecret("not valid JSON (it ends inside a value)")
	case strictjson.KindNotObject:
		return badSecret("must be a JSON object, not a JSON %s", se.JSONType)
	case strictjson.KindUnknownField:
		if se.CaseOf != "" {
			return badSecret("unknown field %s; field names are case-sensitive: did you mean %q?", name(), se.CaseOf)
		}
		return badSecret("unknown field %s; the fields are %s", name(), fields)
	case strictjson.KindDuplicateField:
		// Two values for one key: encoding/json would load the last, a reader of the secret may
		// take the first. Neither value is shown.
		return badSecret("field %s appears more than once; keep one", name())
	case strictjson.KindWrongType:
		return badSecret("field %s must be a %s", name(), se.Want)
	case strictjson.KindTrailingData:
		return badSecret("trailing data after the JSON object (at byte %d)", se.Offset)
	}
	return badSecret("not a JSON object")
}

func parseSeed(field, seed string) (*keypair.Full, error) {
	kp, err := keypair.ParseFull(strings.TrimSpace(seed))
	if err != nil {
		// keypair's error is not shown: it is about the seed's content.
		return nil, badSecret("%s is not a valid secret seed (S...)", field)
	}
	return kp, nil
}

// MarshalSecret writes k as the signing secret document, seeds included. It is for the local
// stack, which generates keys and hands them to the same loader; never log its output.
func (k Keys) MarshalSecret() ([]byte, error) {
	if k.Vault == nil && len(k.Channels) == 0 && !k.ChannelMaster.IsSet() {
		return nil, errors.New("stellar: keys have no vault key and no channel keys")
	}
	var d secretDocument
	if k.Vault != nil {
		d.VaultSeed = k.Vault.Seed()
	}
	if k.Fee != nil {
		d.FeeSeed = k.Fee.Seed()
	}
	for _, c := range k.Channels {
		d.ChannelSeeds = append(d.ChannelSeeds, c.Seed())
	}
	if k.ChannelMaster.IsSet() {
		d.ChannelMasterSeed = hex.EncodeToString(k.ChannelMaster.Bytes())
	}
	return json.Marshal(d)
}
