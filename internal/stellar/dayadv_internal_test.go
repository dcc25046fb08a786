package stellar

import (
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An asset movement into a vault contract that is not its deposit (a wallet calling the asset's
// Stellar Asset Contract transfer to the vault contract directly) is named by getEvents (a
// transfer to a vault contract) and must be listed among the day's other operations: contract
// mode has no balance movement, so unlisted it is in no part of the report.
func TestVaultDayListsAMoveIntoTheVaultContractOutsideItsDeposit(t *testing.T) {
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	issuer, wallet := keypair.MustRandom(), keypair.MustRandom()
	credit := txnbuild.CreditAsset{Code: "USDC", Issuer: issuer.Address()}
	var vaultID [32]byte
	vaultID[0] = 7
	vaultC := strkey.MustEncode(strkey.VersionByteContract, vaultID[:])
	l, err := NewRPCLedger(RPCConfig{URL: "http://127.0.0.1:1", Passphrase: network.TestNetworkPassphrase, VaultAccount: keys.Vault.Address(),
		Assets: []txnbuild.CreditAsset{credit}, Keys: signing.StaticKeys{K: keys}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewContractLedger(l, ContractConfig{Contract: vaultC})
	if err != nil {
		t.Fatal(err)
	}
	sacID, err := xdr.MustNewCreditAsset("USDC", issuer.Address()).ContractID(network.TestNetworkPassphrase)
	if err != nil {
		t.Fatal(err)
	}
	sac := xdr.ContractId(sacID)
	walletID := xdr.MustAddress(wallet.Address())
	from := xdr.ScVal{Type: xdr.ScValTypeScvAddress, Address: &xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeAccount, AccountId: &walletID}}
	vc := xdr.ContractId(vaultID)
	to := xdr.ScVal{Type: xdr.ScValTypeScvAddress, Address: &xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeContract, ContractId: &vc}}
	amount := xdr.ScVal{Type: xdr.ScValTypeScvI128, I128: &xdr.Int128Parts{Lo: 50_000_000}}
	fn := xdr.ScSymbol("transfer")
	env := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: &xdr.TransactionV1Envelope{Tx: xdr.Transaction{
		SourceAccount: xdr.MustMuxedAddress(wallet.Address()), Fee: 100, SeqNum: 1,
		Cond: xdr.Preconditions{Type: xdr.PreconditionTypePrecondNone}, Memo: xdr.Memo{Type: xdr.MemoTypeMemoNone},
		Operations: []xdr.Operation{{Body: xdr.OperationBody{Type: xdr.OperationTypeInvokeHostFunction,
			InvokeHostFunctionOp: &xdr.InvokeHostFunctionOp{HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract,
				InvokeContract: &xdr.InvokeContractArgs{ContractAddress: xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeContract, ContractId: &sac},
					FunctionName: fn, Args: []xdr.ScVal{from, to, amount}}}}}}},
	}}}
	sym := xdr.ScSymbol("transfer")
	asset := xdr.ScString("USDC:" + issuer.Address())
	ev := xdr.ContractEvent{Type: xdr.ContractEventTypeContract, ContractId: &sac, Body: xdr.ContractEventBody{V: 0, V0: &xdr.ContractEventV0{
		Topics: []xdr.ScVal{{Type: xdr.ScValTypeScvSymbol, Sym: &sym}, from, to, {Type: xdr.ScValTypeScvString, Str: &asset}}, Data: amount}}}
	meta := xdr.TransactionMeta{V: 4, V4: &xdr.TransactionMetaV4{Operations: []xdr.OperationMetaV2{{Events: []xdr.ContractEvent{ev}}}}}
	envB64, err := xdr.MarshalBase64(env)
	if err != nil {
		t.Fatal(err)
	}
	metaB64, err := xdr.MarshalBase64(meta)
	if err != nil {
		t.Fatal(err)
	}
	day := &transfer.ChainDay{Failed: map[string]uint32{}, Balances: map[string]transfer.BalanceMovement{}, ContractMode: true}
	sc := &dayScanner{l: l, cl: cl, day: day}
	tx := protocol.TransactionInfo{TransactionDetails: protocol.TransactionDetails{Status: protocol.TransactionStatusSuccess,
		TransactionHash: "ab", EnvelopeXDR: envB64, ResultMetaXDR: metaB64, Ledger: 9}, LedgerCloseTime: 1}
	if err := sc.add(tx); err != nil {
		t.Fatal(err)
	}
	if len(day.Payments) != 0 || len(day.Other) != 1 || day.Other[0].Type != "transfer" || day.Other[0].Ledger != 9 || day.Other[0].Op != 0 {
		t.Fatalf("payments %+v, other %+v", day.Payments, day.Other)
	}
}
