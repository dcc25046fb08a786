package stellar

import (
	"context"
	"fmt"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Balances are one account's balances, in stroops (10^-7 of a unit), as of one ledger.
type Balances struct {
	// Native is the account's XLM balance.
	Native int64
	// Credit holds the balance of each configured asset (ASSETS) the account has a trustline
	// to, keyed by the code as configured; an asset without a trustline is absent.
	Credit map[string]int64
}

// Balances reads account's XLM and its balance of each configured asset with one
// getLedgerEntries request: the account entry and one trustline entry per asset (Stellar RPC,
// "getLedgerEntries"; the keys are stellar-core's LedgerKey ACCOUNT and TRUSTLINE). An account
// that does not exist wraps ErrAccountMissing. It reads the classic trustlines only: a vault
// contract's own balance (VAULT_CONTRACT) is not among them.
func (l *RPCLedger) Balances(ctx context.Context, account string) (Balances, error) {
	id, err := xdr.AddressToAccountId(account)
	if err != nil {
		return Balances{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	var keys []string
	add := func(k xdr.LedgerKey) error {
		b64, err := xdr.MarshalBase64(k)
		keys = append(keys, b64)
		return err
	}
	ak, err := id.LedgerKey()
	if err == nil {
		err = add(ak)
	}
	for _, a := range l.assets {
		if err != nil {
			break
		}
		var xa xdr.Asset
		if xa, err = a.credit.ToXDR(); err != nil {
			break
		}
		var tk xdr.LedgerKey
		if err = tk.SetTrustline(id, xa.ToTrustLineAsset()); err == nil {
			err = add(tk)
		}
	}
	if err != nil {
		return Balances{}, fmt.Errorf("stellar: balances of %s: %w", account, err)
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: keys})
	})
	if err != nil {
		return Balances{}, fmt.Errorf("stellar: getLedgerEntries for the balances of %s: %w", account, err)
	}
	out := Balances{Credit: map[string]int64{}}
	found := false
	for _, e := range resp.Entries {
		var entry xdr.LedgerEntryData
		if err := xdr.SafeUnmarshalBase64(e.DataXDR, &entry); err != nil {
			return Balances{}, fmt.Errorf("stellar: decoding a balance entry of %s: %w", account, err)
		}
		switch {
		case entry.Account != nil:
			out.Native, found = int64(entry.Account.Balance), true
		case entry.TrustLine != nil:
			var typ xdr.AssetType
			var code, issuer string
			if err := entry.TrustLine.Asset.Extract(&typ, &code, &issuer); err != nil {
				return Balances{}, fmt.Errorf("stellar: decoding a trustline of %s: %w", account, err)
			}
			if a, ok := l.assets.find(code); ok && a.credit.Code == code && a.credit.Issuer == issuer {
				out.Credit[a.credit.Code] = int64(entry.TrustLine.Balance)
			}
		}
	}
	if !found {
		return Balances{}, fmt.Errorf("%w: %s", ErrAccountMissing, account)
	}
	return out, nil
}

// Balances reads account's XLM and its balance of each configured asset from Horizon's
// GET /accounts/{id} (its "balances" list, amounts with 7 decimals). An account that does not
// exist wraps ErrAccountMissing.
func (l *HorizonLedger) Balances(ctx context.Context, account string) (Balances, error) {
	a, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Account, error) {
		return c.AccountDetail(horizonclient.AccountRequest{AccountID: account})
	})
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return Balances{}, fmt.Errorf("%w: %s", ErrAccountMissing, account)
		}
		return Balances{}, fmt.Errorf("stellar: GET /accounts/%s: %w", account, err)
	}
	out := Balances{Credit: map[string]int64{}}
	for _, b := range a.Balances {
		v, err := amount.ParseInt64(b.Balance)
		if err != nil {
			return Balances{}, fmt.Errorf("stellar: GET /accounts/%s: balance %q: %w", account, b.Balance, err)
		}
		if b.Type == "native" {
			out.Native = v
			continue
		}
		if va, ok := l.assets.find(b.Code); ok && va.credit.Code == b.Code && va.credit.Issuer == b.Issuer {
			out.Credit[va.credit.Code] = v
		}
	}
	return out, nil
}
