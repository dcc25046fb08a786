package devstack

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// defaultChannels is how many channel accounts the local stack uses unless CHANNEL_COUNT says
// otherwise (CHANNEL_COUNT=0 runs it with the vault as the only transaction source).
const defaultChannels = 8

// channelCount is CHANNEL_COUNT, or defaultChannels when unset.
func channelCount(getenv config.Getenv) string {
	if v := getenv("CHANNEL_COUNT"); v != "" {
		return v
	}
	return strconv.Itoa(defaultChannels)
}

// addChannelKeys gives the local keys a random SEP-5 master seed for the channels unless they
// have one, and funds the fee account (it sponsors the channels' reserves and pays their fee
// bumps) with xlm stroops at genesis: keys.Fee, or with SIGNER=kms (km set) the account of the fee
// account's KMS key.
func addChannelKeys(n *stellarsim.Network, keys *signing.Keys, km *kmsSetup, xlm int64) error {
	if !keys.ChannelMaster.IsSet() {
		seed := make([]byte, 32)
		if _, err := rand.Read(seed); err != nil {
			return err
		}
		keys.ChannelMaster = signing.NewMasterSeed(seed)
	}
	fee := keys.FeeKey()
	if km != nil {
		fee = km.fee
	}
	return n.CreateAccount(fee.Address(), xlm)
}

// createChannels is the local stack's `channels` step: it creates the missing channel accounts on
// the local network (sponsored by the fee account) and returns their addresses.
func createChannels(ctx context.Context, svc *wiring.Service) ([]string, error) {
	if svc.Channels == nil {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	accts, err := svc.Ledger.EnsureChannels(ctx)
	if err != nil {
		return nil, fmt.Errorf("devstack: creating channel accounts: %w", err)
	}
	out := make([]string, len(accts))
	for i, a := range accts {
		out[i] = a.Account
	}
	return out, nil
}
