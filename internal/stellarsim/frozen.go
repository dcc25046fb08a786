package stellarsim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// Frozen ledger keys (protocol 26, CAP-77 "Freeze Ledger Entries via Network Configuration").
//
// On a protocol 26 network the validators can vote a list of ledger keys frozen
// (CONFIG_SETTING_FROZEN_LEDGER_KEYS, changed by a FrozenLedgerKeysDelta upgrade). A transaction
// that would access one is invalid: refused at submission with txFROZEN_KEY_ACCESSED, and dropped
// from the queue (banned, never applied, no fee) when a key it accesses is frozen before it is
// included, since nomination and the queue's re-validation judge it with the same checkValid.
// What a transaction accesses, as stellar-core judges it at validation
// (src/transactions/TransactionFrame.cpp, TransactionFrame::accessesFrozenKey, called from
// commonValidPreSeqNum right after the source account is loaded, so before txBAD_SEQ and
// txBAD_AUTH):
//   - the transaction's source account;
//   - a Soroban transaction's footprint, read-only and read-write;
//   - each operation's source account (OperationFrame::accessesFrozenKey) and what the operation
//     names: Payment a native destination's account, or the source's and the destination's
//     trustlines for a credit asset (PaymentOpFrame::doesAccessFrozenKey); CreateAccount its
//     destination (CreateAccountOpFrame::doesAccessFrozenKey); ChangeTrust the source's trustline
//     (ChangeTrustOpFrame::doesAccessFrozenKey); SetOptions and the sponsorship operations nothing;
//   - a fee bump's fee source (FeeBumpTransactionFrame::checkValid, after its fee source's own
//     checks and before txBAD_AUTH_EXTRA).
//
// Not modelled: the freeze-bypass list (CONFIG_SETTING_FREEZE_BYPASS_TXS), the operations this
// network does not run (claimable balances and liquidity pools are judged at apply there, offers
// removed), and the validator vote itself: FreezeKeys takes effect at once, as an upgrade would
// from the next ledger on.

// frozenKey is the map key of a ledger key: its XDR encoding (core's EncodedLedgerKey).
func frozenKey(k xdr.LedgerKey) (string, error) {
	b, err := k.MarshalBinary()
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// FreezeKeys freezes the ledger keys (accounts, non-pool trustlines, contract data and code, as
// CAP-77's FrozenLedgerKeysDelta allows; another type is an error and nothing changes).
func (n *Network) FreezeKeys(keys ...xdr.LedgerKey) error { return n.changeFrozen(keys, nil) }

// UnfreezeKeys unfreezes the ledger keys; one not frozen is ignored, as the upgrade ignores it.
func (n *Network) UnfreezeKeys(keys ...xdr.LedgerKey) error { return n.changeFrozen(nil, keys) }

// FreezeAccount freezes an account's entry (a G... strkey).
func (n *Network) FreezeAccount(account string) error {
	k, err := accountLedgerKey(account)
	if err != nil {
		return err
	}
	return n.FreezeKeys(k)
}

func accountLedgerKey(account string) (xdr.LedgerKey, error) {
	var id xdr.AccountId
	if err := id.SetAddress(account); err != nil {
		return xdr.LedgerKey{}, fmt.Errorf("stellarsim: %q is not an account: %w", account, err)
	}
	var k xdr.LedgerKey
	err := k.SetAccount(id)
	return k, err
}

// changeFrozen applies a delta as Upgrades.cpp applies a FrozenLedgerKeysDelta: the keys to freeze
// are checked first (NetworkConfig.cpp: only ACCOUNT, TRUSTLINE without pool shares,
// CONTRACT_DATA and CONTRACT_CODE).
func (n *Network) changeFrozen(freeze, unfreeze []xdr.LedgerKey) error {
	add := make([]string, 0, len(freeze))
	for _, k := range freeze {
		switch k.Type {
		case xdr.LedgerEntryTypeAccount, xdr.LedgerEntryTypeContractData, xdr.LedgerEntryTypeContractCode:
		case xdr.LedgerEntryTypeTrustline:
			if k.TrustLine.Asset.Type == xdr.AssetTypeAssetTypePoolShare {
				return fmt.Errorf("stellarsim: a pool share trustline cannot be frozen")
			}
		default:
			return fmt.Errorf("stellarsim: a %s ledger key cannot be frozen (CAP-77)", k.Type)
		}
		s, err := frozenKey(k)
		if err != nil {
			return fmt.Errorf("stellarsim: encoding a ledger key: %w", err)
		}
		add = append(add, s)
	}
	del := make([]string, 0, len(unfreeze))
	for _, k := range unfreeze {
		s, err := frozenKey(k)
		if err != nil {
			return fmt.Errorf("stellarsim: encoding a ledger key: %w", err)
		}
		del = append(del, s)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.frozen == nil {
		n.frozen = map[string]bool{}
	}
	for _, s := range add {
		n.frozen[s] = true
	}
	for _, s := range del {
		delete(n.frozen, s)
	}
	return nil
}

// FrozenKeys lists the frozen ledger keys, base64 XDR, sorted.
func (n *Network) FrozenKeys() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.frozen))
	for s := range n.frozen {
		out = append(out, base64.StdEncoding.EncodeToString([]byte(s)))
	}
	slices.Sort(out)
	return out
}

// isFrozen is SorobanNetworkConfig::isKeyFrozen. Callers hold n.mu.
func (n *Network) isFrozen(k xdr.LedgerKey) bool {
	if len(n.frozen) == 0 {
		return false
	}
	s, err := frozenKey(k)
	return err == nil && n.frozen[s]
}

func (n *Network) accountFrozen(account string) bool {
	if len(n.frozen) == 0 {
		return false
	}
	k, err := accountLedgerKey(account)
	return err == nil && n.isFrozen(k)
}

func (n *Network) trustlineFrozen(account string, asset xdr.Asset) bool {
	if len(n.frozen) == 0 || asset.Type == xdr.AssetTypeAssetTypeNative {
		return false
	}
	var id xdr.AccountId
	if id.SetAddress(account) != nil {
		return false
	}
	var k xdr.LedgerKey
	if k.SetTrustline(id, asset.ToTrustLineAsset()) != nil {
		return false
	}
	return n.isFrozen(k)
}

// accessesFrozenKey is TransactionFrame::accessesFrozenKey over the (inner) transaction t (see the
// file comment). Callers hold n.mu.
func (n *Network) accessesFrozenKey(t *txInfo) bool {
	if len(n.frozen) == 0 {
		return false
	}
	if n.accountFrozen(t.source) {
		return true
	}
	if t.soroban != nil {
		fp := t.soroban.Resources.Footprint
		for _, k := range slices.Concat(fp.ReadOnly, fp.ReadWrite) {
			if n.isFrozen(k) {
				return true
			}
		}
	}
	for _, op := range t.ops {
		src := t.opSource(op)
		if op.SourceAccount != nil && n.accountFrozen(src) {
			return true
		}
		switch op.Body.Type {
		case xdr.OperationTypePayment:
			p := op.Body.PaymentOp
			dest := p.Destination.ToAccountId().Address()
			if p.Asset.Type == xdr.AssetTypeAssetTypeNative {
				if n.accountFrozen(dest) {
					return true
				}
				continue
			}
			if n.trustlineFrozen(src, p.Asset) || n.trustlineFrozen(dest, p.Asset) {
				return true
			}
		case xdr.OperationTypeCreateAccount:
			if n.accountFrozen(op.Body.CreateAccountOp.Destination.Address()) {
				return true
			}
		case xdr.OperationTypeChangeTrust:
			line := op.Body.ChangeTrustOp.Line
			if line.Type == xdr.AssetTypeAssetTypeCreditAlphanum4 || line.Type == xdr.AssetTypeAssetTypeCreditAlphanum12 {
				if n.trustlineFrozen(src, line.ToAsset()) {
					return true
				}
			}
		}
	}
	return false
}

// frozenKeysJSON is GET and PUT /_sim/frozen_keys's body: ledger keys as base64 XDR, as a
// FrozenLedgerKeysDelta upgrade carries them (keysToFreeze, keysToUnfreeze).
type frozenKeysJSON struct {
	Freeze   []string `json:"freeze,omitempty"`
	Unfreeze []string `json:"unfreeze,omitempty"`
	Frozen   []string `json:"frozen"`
}

func (n *Network) adminFrozenKeys(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPut {
		var req frozenKeysJSON
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<16))
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		var freeze, unfreeze []xdr.LedgerKey
		if err == nil {
			freeze, err = decodeLedgerKeys(req.Freeze)
		}
		if err == nil {
			unfreeze, err = decodeLedgerKeys(req.Unfreeze)
		}
		if err == nil {
			err = n.changeFrozen(freeze, unfreeze)
		}
		if err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
	}
	writeJSON(w, http.StatusOK, frozenKeysJSON{Frozen: n.FrozenKeys()})
}

func decodeLedgerKeys(in []string) ([]xdr.LedgerKey, error) {
	out := make([]xdr.LedgerKey, 0, len(in))
	for _, s := range in {
		var k xdr.LedgerKey
		if err := xdr.SafeUnmarshalBase64(s, &k); err != nil {
			return nil, fmt.Errorf("want ledger keys as base64 XDR: %w", err)
		}
		out = append(out, k)
	}
	return out, nil
}
