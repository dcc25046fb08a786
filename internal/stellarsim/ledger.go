package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// account is one account entry. A new account has its master key as its
// only signer (weight 1, all thresholds 0); SetOptions changes that (auth).
type account struct {
	id            string
	balance       int64
	seq           int64
	numSubEntries uint32
	numSponsoring uint32
	numSponsored  uint32
	sponsor       string // who pays this account's base reserves, if anyone
	lastModified  uint32
	// auth is the thresholds and added signers; nil is a new account's
	// (defaultAuth, signatures.go).
	auth *accountAuth
}

type tlKey struct {
	account string
	asset   Asset
}

type trustline struct {
	balance      int64
	limit        int64
	sponsor      string
	lastModified uint32
}

// ledgerState is everything a transaction can read or write.
type ledgerState struct {
	accounts   map[string]*account
	trustlines map[tlKey]*trustline
}

func newLedgerState() *ledgerState {
	return &ledgerState{accounts: map[string]*account{}, trustlines: map[tlKey]*trustline{}}
}

// minBalance is what an account must keep: (2 + subentries + sponsoring -
// sponsored) base reserves, as in stellar-core.
func minBalance(a *account, baseReserve int64) int64 {
	n := int64(2) + int64(a.numSubEntries) + int64(a.numSponsoring) - int64(a.numSponsored)
	if n < 0 {
		n = 0
	}
	return n * baseReserve
}

// view is a copy-on-write overlay over ledgerState so an operation batch can
// be applied tentatively and thrown away if the transaction fails.
type view struct {
	base       *ledgerState
	accounts   map[string]*account
	trustlines map[tlKey]*trustline // nil value = deleted
}

func newView(base *ledgerState) *view {
	return &view{base: base, accounts: map[string]*account{}, trustlines: map[tlKey]*trustline{}}
}

// account returns a writable copy of the account, or nil.
func (v *view) account(id string) *account {
	if a, ok := v.accounts[id]; ok {
		return a
	}
	b, ok := v.base.accounts[id]
	if !ok {
		return nil
	}
	c := *b
	v.accounts[id] = &c
	return &c
}

func (v *view) createAccount(a *account) { v.accounts[a.id] = a }

func (v *view) trustline(id string, asset Asset) *trustline {
	k := tlKey{id, asset}
	if t, ok := v.trustlines[k]; ok {
		return t
	}
	b, ok := v.base.trustlines[k]
	if !ok {
		return nil
	}
	c := *b
	v.trustlines[k] = &c
	return &c
}

func (v *view) setTrustline(id string, asset Asset, t *trustline) { v.trustlines[tlKey{id, asset}] = t }

// commit writes the overlay into the base state, stamping lastModified and
// saving the entries' previous states in n's undo log of the ledger.
func (v *view) commit(ledger uint32, n *Network) {
	for id, a := range v.accounts {
		n.saveAccount(ledger, id)
		a.lastModified = ledger
		v.base.accounts[id] = a
	}
	for k, t := range v.trustlines {
		n.saveTrustline(ledger, k)
		if t == nil {
			delete(v.base.trustlines, k)
			continue
		}
		t.lastModified = ledger
		v.base.trustlines[k] = t
	}
}

func (a *account) entryXDR() (xdr.LedgerEntryData, error) {
	id, err := xdr.AddressToAccountId(a.id)
	if err != nil {
		return xdr.LedgerEntryData{}, err
	}
	e := xdr.AccountEntry{
		AccountId:     id,
		Balance:       xdr.Int64(a.balance),
		SeqNum:        xdr.SequenceNumber(a.seq),
		NumSubEntries: xdr.Uint32(a.numSubEntries),
	}
	auth := authOf(a)
	e.Thresholds = xdr.Thresholds(auth.thresholds)
	for _, sg := range auth.signers {
		k, err := xdr.AddressToAccountId(sg.key)
		if err != nil {
			return xdr.LedgerEntryData{}, err
		}
		e.Signers = append(e.Signers, xdr.Signer{Key: xdr.SignerKey{Type: xdr.SignerKeyTypeSignerKeyTypeEd25519, Ed25519: k.Ed25519}, Weight: xdr.Uint32(sg.weight)})
	}
	if a.numSponsored > 0 || a.numSponsoring > 0 {
		e.Ext = xdr.AccountEntryExt{V: 1, V1: &xdr.AccountEntryExtensionV1{
			Ext: xdr.AccountEntryExtensionV1Ext{V: 2, V2: &xdr.AccountEntryExtensionV2{
				NumSponsored:  xdr.Uint32(a.numSponsored),
				NumSponsoring: xdr.Uint32(a.numSponsoring),
			}},
		}}
	}
	return xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeAccount, Account: &e}, nil
}

func (t *trustline) entryXDR(id string, asset Asset) (xdr.LedgerEntryData, error) {
	aid, err := xdr.AddressToAccountId(id)
	if err != nil {
		return xdr.LedgerEntryData{}, err
	}
	xa, err := asset.XDR()
	if err != nil {
		return xdr.LedgerEntryData{}, err
	}
	e := xdr.TrustLineEntry{
		AccountId: aid,
		Asset:     xa.ToTrustLineAsset(),
		Balance:   xdr.Int64(t.balance),
		Limit:     xdr.Int64(t.limit),
		Flags:     xdr.Uint32(xdr.TrustLineFlagsAuthorizedFlag),
	}
	return xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeTrustline, TrustLine: &e}, nil
}
