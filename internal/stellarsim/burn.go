package stellarsim

import "fmt"

// Burn debits amount of asset from account, outside any ledger close as Mint credits it: back to
// the issuer for a credit asset, to root for lumens (never below the account's reserve). Tests use
// it to empty an account between a check and the ledger that applies a transaction.
func (n *Network) Burn(from string, asset Asset, amount int64) error {
	if amount <= 0 {
		return fmt.Errorf("stellarsim: amount must be positive, got %d", amount)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	latest := uint32(len(n.closeTimes))
	a := n.state.accounts[from]
	if a == nil {
		return fmt.Errorf("stellarsim: account %s: %w", from, ErrNotFound)
	}
	if asset.IsNative() {
		if a.balance-minBalance(a, n.opts.BaseReserve) < amount {
			return fmt.Errorf("stellarsim: account %s: %w", from, ErrUnderfunded)
		}
		a.balance -= amount
		n.state.accounts[n.root.Address()].balance += amount
		a.lastModified = latest
		return nil
	}
	t := n.state.trustlines[tlKey{from, asset}]
	if t == nil {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", from, asset, ErrNotFound)
	}
	if t.balance < amount {
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", from, asset, ErrUnderfunded)
	}
	t.balance -= amount
	t.lastModified = latest
	return nil
}

// RemoveTrustline deletes account's trustline to asset, outside any ledger close, as an operator's
// ChangeTrust with limit 0 would (the balance must be 0; a sponsored trustline is refused).
func (n *Network) RemoveTrustline(account string, asset Asset) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	a := n.state.accounts[account]
	if a == nil {
		return fmt.Errorf("stellarsim: account %s: %w", account, ErrNotFound)
	}
	k := tlKey{account, asset}
	t := n.state.trustlines[k]
	switch {
	case t == nil:
		return fmt.Errorf("stellarsim: trustline %s/%s: %w", account, asset, ErrNotFound)
	case t.balance != 0:
		return fmt.Errorf("stellarsim: trustline %s/%s holds %d stroops", account, asset, t.balance)
	case t.sponsor != "":
		return fmt.Errorf("stellarsim: trustline %s/%s is sponsored", account, asset)
	}
	delete(n.state.trustlines, k)
	a.numSubEntries--
	a.lastModified = uint32(len(n.closeTimes))
	return nil
}
