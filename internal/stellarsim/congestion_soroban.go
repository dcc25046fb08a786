package stellarsim

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Background Soroban traffic (Congestion.SorobanPerLedger): after every close, contract calls
// from accounts the network creates for itself enter the queue like any other transaction. Each
// is one InvokeHostFunction, a deposit by a background account into its own balance in a vault
// it operates (VaultHost.backgroundVault), built as a client builds one: simulateTransaction's
// footprint, declared resources, resource fee and source-account auth entry (the same
// simulation the RPC serves), then an inclusion fee on top. From there nothing is special about
// it: it is judged at submission, counted against the Soroban queue's limits and evicts or is
// evicted there (queuelimit.go: stellar-core src/herder/TxQueueLimiter.cpp, TxQueueLimiter::
// canAddTx with SurgePricingPriorityQueue::canFitWithEviction on the Soroban queue,
// SorobanTransactionQueue in src/herder/TransactionQueue.cpp), competes for the Soroban phase's
// per-ledger limits by inclusion fee per operation, is charged the phase's base fee plus its
// resource fee less the refund, and its inclusion fee enters getFeeStats's sorobanInclusionFee
// (lanes.go: src/herder/SurgePricingUtils.cpp, SurgePricingPriorityQueue::
// getMostTopTxsWithinLimits, and src/herder/TxSetFrame.cpp, computeLaneBaseFee; the resources
// counted are TransactionFrame::getResources's for a Soroban transaction in
// src/transactions/TransactionFrame.cpp: one operation, the declared instructions, write bytes
// and read-write entries; feestats.go: stellar-rpc's FeeWindows.IngestFees).
//
// The bids are drawn from a generator of their own (seeded from the profile's seed), so a
// profile with Soroban traffic gives the same classic traffic as the same profile without it.

// sorobanBackgroundHost is what a contract host needs to carry the traffic: a vault per
// background account (backgroundVault) and simulation (simulator).
type sorobanBackgroundHost interface {
	simulator
	backgroundVault(passphrase, operator string, latest uint32) (string, error)
}

// validateSoroban checks the Soroban part of a profile and fills its defaults.
func (c *Congestion) validateSoroban(baseFee int64) error {
	if c.SorobanPerLedger < 0 || c.SorobanPerLedger > 100_000 {
		return errors.New("congestion: soroban_per_ledger must be 0 to 100000")
	}
	if c.SorobanFeeMin == 0 {
		c.SorobanFeeMin = c.FeeMin
	}
	if c.SorobanFeeMax == 0 {
		c.SorobanFeeMax = max(c.FeeMax, c.SorobanFeeMin)
	}
	// The same bounds as the classic bids (a transaction's fee is a uint32; a call's inclusion
	// bid gives way to its resource fee when both do not fit, backgroundCallLocked).
	if c.SorobanFeeMin < baseFee || c.SorobanFeeMax < c.SorobanFeeMin || c.SorobanFeeMax > math.MaxUint32 {
		return fmt.Errorf("congestion: want base fee (%d) <= soroban_fee_min <= soroban_fee_max <= %d, got %d and %d",
			baseFee, uint32(math.MaxUint32), c.SorobanFeeMin, c.SorobanFeeMax)
	}
	if c.SorobanInstructions < 0 || c.SorobanInstructions > math.MaxUint32 {
		return fmt.Errorf("congestion: soroban_instructions must be 0 to %d", uint32(math.MaxUint32))
	}
	if c.SorobanAccounts == 0 {
		c.SorobanAccounts = 8 * c.SorobanPerLedger
	}
	if c.SorobanAccounts < 0 || c.SorobanAccounts > 1_000_000 {
		return errors.New("congestion: soroban_accounts must be 0 to 1000000")
	}
	if c.SorobanAccounts == 0 {
		for _, s := range c.Spikes {
			if s.SorobanPerLedger > 0 {
				return errors.New("congestion: a spike's soroban_per_ledger needs soroban_per_ledger or soroban_accounts")
			}
		}
	}
	return nil
}

// armSorobanBackgroundLocked creates the Soroban traffic's accounts (funded by the root
// account) and its generator. A profile with Soroban traffic on a network whose contract host
// cannot carry it is refused. Callers hold n.mu.
func (n *Network) armSorobanBackgroundLocked(bg *background) error {
	c := bg.profile
	if c.SorobanAccounts == 0 {
		return nil
	}
	if _, ok := n.contracts.(sorobanBackgroundHost); !ok {
		return errors.New("congestion: Soroban traffic needs a contract host that runs vault contracts (Options.Contracts: a VaultHost)")
	}
	bg.srng = rand.New(rand.NewPCG(splitmix64(c.Seed^0x736f726f62616e), c.Seed))
	for i := range c.SorobanAccounts {
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], c.Seed)
		binary.BigEndian.PutUint64(b[8:], uint64(i))
		seed := sha256.Sum256(append([]byte("stellarsim background soroban account "), b[:]...))
		kp, err := keypair.FromRawSeed(seed)
		if err != nil {
			return fmt.Errorf("congestion: background key: %w", err)
		}
		if _, ok := n.state.accounts[kp.Address()]; !ok {
			if err := n.createAccountLocked(kp.Address(), backgroundBalance); err != nil {
				return fmt.Errorf("congestion: background account: %w", err)
			}
		}
		bg.sorobanAccounts = append(bg.sorobanAccounts, kp)
	}
	return nil
}

// backgroundSorobanLocked submits the Soroban calls due after a close, sp being the running
// spike (nil outside spikes). Callers hold n.mu.
func (n *Network) backgroundSorobanLocked(sp *Spike) {
	bg := n.cong.bg
	host, ok := n.contracts.(sorobanBackgroundHost)
	if !ok || len(bg.sorobanAccounts) == 0 {
		return
	}
	p := bg.profile
	count := p.SorobanPerLedger
	if sp != nil && sp.SorobanPerLedger > 0 {
		count = sp.SorobanPerLedger
	}
	latest := n.latestLocked()
	lo, hi := math.Log(float64(p.SorobanFeeMin)), math.Log(float64(p.SorobanFeeMax))
	for range count {
		kp, _ := n.freeAccountOf(bg.sorobanAccounts, &bg.sorobanNext)
		if kp == nil {
			return
		}
		bid := int64(math.Round(math.Exp(lo + (hi-lo)*bg.srng.Float64())))
		bid = min(max(bid, p.SorobanFeeMin), p.SorobanFeeMax)
		if sp != nil {
			bid = max(bid, int64(math.Ceil(sp.Multiplier*float64(bg.sorobanSpikeBase))))
		}
		bg.sorobanMade++
		b64, err := n.backgroundCallLocked(host, kp, latest, bid, int64(1+bg.sorobanMade%1000))
		if err != nil {
			// Nothing to submit for this account (its call could not be simulated): the
			// traffic goes on with the next one.
			continue
		}
		t, err := decodeEnvelope(b64, n.passphrase)
		if err != nil {
			continue
		}
		rec := &ReceivedEnvelope{At: n.clock.Now().UTC(), API: "background", Hash: t.fullHash, InnerHash: t.innerHash,
			Source: t.source, Sequence: t.seq, LatestLedger: latest.Sequence, EnvelopeXDR: b64}
		n.acceptLocked(&submission{tx: t, latest: latest, rec: rec})
	}
}

// backgroundCallLocked builds and signs kp's deposit of amount into its own balance in its
// background vault, as a client does: simulate, take the transaction data and auth, bid
// inclusion stroops on top of the resource fee. Callers hold n.mu (the host's lock is taken
// inside, after it).
func (n *Network) backgroundCallLocked(host sorobanBackgroundHost, kp *keypair.Full, latest LedgerInfo, inclusion, amount int64) (string, error) {
	p := n.cong.bg.profile
	contract, err := host.backgroundVault(n.passphrase, kp.Address(), latest.Sequence)
	if err != nil {
		return "", err
	}
	caddr, err := contractScAddress(contract)
	if err != nil {
		return "", err
	}
	waddr, err := accountScAddress(kp.Address())
	if err != nil {
		return "", err
	}
	call := &txnbuild.InvokeHostFunction{HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract,
		InvokeContract: &xdr.InvokeContractArgs{ContractAddress: caddr, FunctionName: fnDeposit,
			Args: []xdr.ScVal{addressVal(waddr), i128Val(amount)}}}}
	acct := n.state.accounts[kp.Address()]
	params := txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: kp.Address(), Sequence: acct.seq},
		IncrementSequenceNum: true,
		BaseFee:              inclusion,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, n.closeTimes[len(n.closeTimes)-1]+300)},
		Operations:           []txnbuild.Operation{call},
	}
	draft, err := txnbuild.NewTransaction(params)
	if err != nil {
		return "", err
	}
	draftB64, err := draft.Base64()
	if err != nil {
		return "", err
	}
	sim, err := host.simulate(latest, protocol.SimulateTransactionRequest{Transaction: draftB64})
	if err != nil {
		return "", err
	}
	if sim.Error != "" || len(sim.Results) != 1 || sim.Results[0].AuthXDR == nil {
		return "", fmt.Errorf("simulation: %s", sim.Error)
	}
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		return "", err
	}
	if want := xdr.Uint32(p.SorobanInstructions); want > data.Resources.Instructions {
		// Declaring more instructions costs their non-refundable fee (fees.go).
		before := nonRefundableFee(data.Resources)
		data.Resources.Instructions = want
		data.ResourceFee += xdr.Int64(nonRefundableFee(data.Resources) - before)
	}
	for _, a := range *sim.Results[0].AuthXDR {
		var entry xdr.SorobanAuthorizationEntry
		if err := xdr.SafeUnmarshalBase64(a, &entry); err != nil {
			return "", err
		}
		call.Auth = append(call.Auth, entry)
	}
	call.Ext = xdr.TransactionExt{V: 1, SorobanData: &data}
	// The fee is an uint32: the inclusion bid gives way to the resource fee.
	params.BaseFee = min(inclusion, math.MaxUint32-int64(data.ResourceFee))
	params.SourceAccount = &txnbuild.SimpleAccount{AccountID: kp.Address(), Sequence: acct.seq}
	tx, err := txnbuild.NewTransaction(params)
	if err != nil {
		return "", err
	}
	if tx, err = tx.Sign(n.passphrase, kp); err != nil {
		return "", err
	}
	return tx.Base64()
}
