package stellarsim

import (
	"fmt"
	"math"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
)

// The helpers below act directly on the ledger state, like genesis: no
// transaction, no fee, no reserve check, effective immediately (visible to
// RPC and Horizon before any ledger closes). Lumens come out of the root account.

// AccountInfo is an account as the ledger holds it.
type AccountInfo struct {
	Address       string
	Balance       int64 // native, stroops
	Sequence      int64
	NumSubEntries uint32
	NumSponsoring uint32
	NumSponsored  uint32
	Sponsor       string
	LastModified  uint32
}

// Txnbuild converts the asset for txnbuild operations.
func (a Asset) Txnbuild() txnbuild.Asset {
	if a.IsNative() {
		return txnbuild.NativeAsset{}
	}
	return txnbuild.CreditAsset{Code: a.Code, Issuer: a.Issuer}
}

func validAddress(address string) error {
	if !strkey.IsValidEd25519PublicKey(address) {
		return fmt.Errorf("stellarsim: invalid account address %q", address)
	}
	return nil
}

// CreateAccount creates address with nativeStroops lumens taken from root.
// Its sequence number is latestLedger<<32, as for an account created in the
// latest ledger.
func (n *Network) CreateAccount(address string, nativeStroops int64) error {
	if err := validAddress(address); err != nil {
		return err
	}
	if nativeStroops < 0 {
		return fmt.Errorf("stellarsim: negative balance %d", nativeStroops)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.createAccountLocked(address, nativeStroops)
}

func (n *Network) createAccountLocked(address string, nativeStroops int64) error {
	if _, ok := n.state.accounts[address]; ok {
		return fmt.Errorf("stellarsim: account %s: %w", address, ErrExists)
	}
	root := n.state.accounts[n.root.Address()]
	if root.balance-minBalance(root, n.opts.BaseReserve) < nativeStroops {
		return fmt.Errorf("stellarsim: root account: %w", ErrUnderfunded)
	}
	latest := uint32(len(n.closeTimes))
	root.balance -= nativeStroops
	n.state.accounts[address] = &account{id: address, balance: nativeStroops, seq: int64(latest) << 32, lastModified: latest}
	return nil
}

// CreateKeypair makes a random keypair and creates its account with nativeStroops.
func (n *Network) CreateKeypair(nativeStroops int64) (*keypair.Full, error) {
	kp, err := keypair.Random()
	if err != nil {
		return nil, fmt.Errorf("stellarsim: random keypair: %w", err)
	}
	if err := n.CreateAccount(kp.Address(), nativeStroops); err != nil {
		return nil, err
	}
	return kp, nil
}

// IssueAsset returns the credit asset code:issuer, creating the issuer's
// account (1,000 XLM) if it does not exist yet.
func (n *Network) IssueAsset(code string, issuer *keypair.Full) Asset {
	a := Asset{Code: code, Issuer: issuer.Address()}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.state.accounts[a.Issuer]; !ok {
		_ = n.createAccountLocked(a.Issuer, 1_000*10_000_000)
	}
	return a
}

// AddTrustline gives account a trustline to asset (limit 0 means the maximum).
func (n *Network) AddTrustline(account string, asset Asset, limit int64) error {
	if asset.IsNative() {
		return fmt.Errorf("stellarsim: no trustline for the native asset")
	}
	if _, err := asset.XDR(); err != nil {
		return fmt.Errorf("stellarsim: asset %s: %w", asset, err)
	}
	if limit <= 0 {
		limit = math.MaxInt64
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	a := n.state.accounts[account]
	if a == nil {
		return fmt.Errorf("stellarsim: account %s: %w", account, ErrNotFound)
	}
	if account == asset.Issuer {
		return fmt.Errorf("stellarsim: %s issues %s and cannot trust it", account, asset)
	}
	k := tlKey{account, asset}
	if _, ok := n.state.trustlines[k]; ok {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", account, asset, ErrExists)
	}
	latest := uint32(len(n.closeTimes))
	a.numSubEntries++
	a.lastModified = latest
	n.state.trustlines[k] = &trustline{limit: limit, lastModified: latest}
	return nil
}

// Mint credits amount of asset to account: from the issuer for a credit
// asset (the trustline must exist and have room), from root for lumens.
func (n *Network) Mint(to string, asset Asset, amount int64) error {
	if amount <= 0 {
		return fmt.Errorf("stellarsim: amount must be positive, got %d", amount)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	latest := uint32(len(n.closeTimes))
	a := n.state.accounts[to]
	if a == nil {
		return fmt.Errorf("stellarsim: account %s: %w", to, ErrNotFound)
	}
	if asset.IsNative() {
		root := n.state.accounts[n.root.Address()]
		if root.balance-minBalance(root, n.opts.BaseReserve) < amount {
			return fmt.Errorf("stellarsim: root account: %w", ErrUnderfunded)
		}
		root.balance -= amount
		a.balance += amount
		a.lastModified = latest
		return nil
	}
	t := n.state.trustlines[tlKey{to, asset}]
	if t == nil {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", to, asset, ErrNotFound)
	}
	if t.balance > t.limit-amount {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", to, asset, ErrLineFull)
	}
	t.balance += amount
	t.lastModified = latest
	return nil
}

// Balance returns account's balance of asset in stroops.
func (n *Network) Balance(account string, asset Asset) (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return viewBalances{newView(n.state)}.Balance(account, asset)
}

// Account returns the account's state.
func (n *Network) Account(address string) (AccountInfo, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	a := n.state.accounts[address]
	if a == nil {
		return AccountInfo{}, false
	}
	return AccountInfo{Address: a.id, Balance: a.balance, Sequence: a.seq, NumSubEntries: a.numSubEntries,
		NumSponsoring: a.numSponsoring, NumSponsored: a.numSponsored, Sponsor: a.sponsor, LastModified: a.lastModified}, true
}

// SetTrustlineAuth sets the issuer's authorization of account's trustline to asset, as the
// issuer's SetTrustLineFlags would (that operation is not modelled): a payment to a line that is
// not Authorized fails op_not_authorized, from it op_src_not_authorized. Errors: ErrNotFound when
// the trustline does not exist.
func (n *Network) SetTrustlineAuth(account string, asset Asset, auth TrustlineAuth) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.state.trustlines[tlKey{account, asset}]
	if t == nil {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", account, asset, ErrNotFound)
	}
	t.auth = auth
	t.lastModified = uint32(len(n.closeTimes))
	return nil
}

// SetLiabilities sets the buying and selling liabilities (stroops) of account's trustline to
// asset, or of the account itself for the native asset, as its open offers would (offers are not
// modelled). A payment's room counts them as stellar-core does (addBalance: the destination's
// balance may not pass its limit, or INT64_MAX, minus its buying liabilities; the source's may not
// fall below its selling liabilities). Errors: ErrNotFound, or negative liabilities.
func (n *Network) SetLiabilities(account string, asset Asset, buying, selling int64) error {
	if buying < 0 || selling < 0 {
		return fmt.Errorf("stellarsim: negative liabilities %d, %d", buying, selling)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	latest := uint32(len(n.closeTimes))
	if asset.IsNative() {
		a := n.state.accounts[account]
		if a == nil {
			return fmt.Errorf("stellarsim: account %s: %w", account, ErrNotFound)
		}
		a.buying, a.selling, a.lastModified = buying, selling, latest
		return nil
	}
	t := n.state.trustlines[tlKey{account, asset}]
	if t == nil {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", account, asset, ErrNotFound)
	}
	t.buying, t.selling, t.lastModified = buying, selling, latest
	return nil
}
