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
	// buying and selling are the native liabilities (AccountEntryExtensionV1), set only by
	// SetLiabilities: offers are not modelled.
	buying, selling int64
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
	// auth is the issuer's authorization (TrustLineFlags); the zero value is AUTHORIZED_FLAG,
	// what every trustline has unless SetTrustlineAuth changes it.
	auth TrustlineAuth
	// buying and selling are the trustline's liabilities (TrustLineEntry.ext.v1), set only by
	// SetLiabilities: offers are not modelled.
	buying, selling int64
}

// TrustlineAuth is a trustline's authorization by its issuer (stellar-xdr TrustLineFlags).
type TrustlineAuth int

const (
	// Authorized is AUTHORIZED_FLAG: the line may receive and send.
	Authorized TrustlineAuth = iota
	// AuthorizedToMaintainLiabilities is AUTHORIZED_TO_MAINTAIN_LIABILITIES_FLAG alone: the line
	// keeps its offers but can neither receive nor send a payment (TrustLineWrapper::isAuthorized
	// is false).
	AuthorizedToMaintainLiabilities
	// Unauthorized has neither flag.
	Unauthorized
)

// flags is auth as the entry's TrustLineFlags.
func (a TrustlineAuth) flags() xdr.Uint32 {
	switch a {
	case AuthorizedToMaintainLiabilities:
		return xdr.Uint32(xdr.TrustLineFlagsAuthorizedToMaintainLiabilitiesFlag)
	case Unauthorized:
		return 0
	}
	return xdr.Uint32(xdr.TrustLineFlagsAuthorizedFlag)
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

// view is a copy-on-write overlay over ledgerState so a transaction's operations can be applied
// tentatively and thrown away if the transaction fails. A view may be nested in another (child),
// as stellar-core nests a LedgerTxn per operation in the transaction's
// (TransactionFrame::applyOperations: ltxOp over ltxTx): the child sees its parent's writes, and
// its own reach the parent only by merge.
type view struct {
	base       *ledgerState
	parent     *view // nil: over base directly
	accounts   map[string]*account
	trustlines map[tlKey]*trustline // nil value = deleted
}

func newView(base *ledgerState) *view {
	return &view{base: base, accounts: map[string]*account{}, trustlines: map[tlKey]*trustline{}}
}

// child is a view nested in v: an operation's scope inside its transaction's.
func (v *view) child() *view {
	c := newView(v.base)
	c.parent = v
	return c
}

// merge writes v's changes into its parent: an operation that succeeded commits into the
// transaction's scope (ltxOp.commit()). A failed operation's child is dropped instead.
func (v *view) merge() {
	for id, a := range v.accounts {
		v.parent.accounts[id] = a
	}
	for k, t := range v.trustlines {
		v.parent.trustlines[k] = t
	}
}

// peekAccount is id's entry as v sees it, not copied: v's own, its parents', or the base's.
func (v *view) peekAccount(id string) *account {
	for s := v; s != nil; s = s.parent {
		if a, ok := s.accounts[id]; ok {
			return a
		}
	}
	return v.base.accounts[id]
}

// peekTrustline is k's entry as v sees it, not copied; nil when absent or deleted.
func (v *view) peekTrustline(k tlKey) *trustline {
	for s := v; s != nil; s = s.parent {
		if t, ok := s.trustlines[k]; ok {
			return t
		}
	}
	return v.base.trustlines[k]
}

// account returns a writable copy of the account, or nil.
func (v *view) account(id string) *account {
	if a, ok := v.accounts[id]; ok {
		return a
	}
	b := v.peekAccount(id)
	if b == nil {
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
	b := v.peekTrustline(k)
	if b == nil {
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
	if a.numSponsored > 0 || a.numSponsoring > 0 || a.buying > 0 || a.selling > 0 {
		v1 := &xdr.AccountEntryExtensionV1{Liabilities: xdr.Liabilities{Buying: xdr.Int64(a.buying), Selling: xdr.Int64(a.selling)}}
		if a.numSponsored > 0 || a.numSponsoring > 0 {
			v1.Ext = xdr.AccountEntryExtensionV1Ext{V: 2, V2: &xdr.AccountEntryExtensionV2{
				NumSponsored:  xdr.Uint32(a.numSponsored),
				NumSponsoring: xdr.Uint32(a.numSponsoring),
			}}
		}
		e.Ext = xdr.AccountEntryExt{V: 1, V1: v1}
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
		Flags:     t.auth.flags(),
	}
	if t.buying > 0 || t.selling > 0 {
		e.Ext = xdr.TrustLineEntryExt{V: 1, V1: &xdr.TrustLineEntryV1{
			Liabilities: xdr.Liabilities{Buying: xdr.Int64(t.buying), Selling: xdr.Int64(t.selling)}}}
	}
	return xdr.LedgerEntryData{Type: xdr.LedgerEntryTypeTrustline, TrustLine: &e}, nil
}
