package stellarsim

import (
	"math"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// The classic operations at apply, as stellar-core's operation frames do them
// (src/transactions/CreateAccountOpFrame.cpp, PaymentOpFrame.cpp,
// ChangeTrustOpFrame.cpp), inside one transaction's view of the ledger.

func (ac *applyCtx) createAccount(src *account, op xdr.CreateAccountOp, reserve int64) (xdr.OperationResult, bool) {
	dest := op.Destination.Address()
	if ac.v.account(dest) != nil {
		return createAccountResult(xdr.CreateAccountResultCodeCreateAccountAlreadyExist), false
	}
	start := int64(op.StartingBalance)
	sponsorID := ac.sponsors[dest]
	if sponsorID == "" {
		if start < 2*reserve {
			return createAccountResult(xdr.CreateAccountResultCodeCreateAccountLowReserve), false
		}
	} else {
		sp := ac.v.account(sponsorID)
		if sp == nil || sp.balance-minBalance(sp, reserve) < 2*reserve {
			return createAccountResult(xdr.CreateAccountResultCodeCreateAccountLowReserve), false
		}
	}
	if src.balance-minBalance(src, reserve) < start {
		return createAccountResult(xdr.CreateAccountResultCodeCreateAccountUnderfunded), false
	}
	src.balance -= start
	na := &account{id: dest, balance: start, seq: int64(ac.ledger) << 32}
	if sponsorID != "" {
		sp := ac.v.account(sponsorID)
		sp.numSponsoring += 2
		na.numSponsored = 2
		na.sponsor = sponsorID
	}
	ac.v.createAccount(na)
	// CreateAccountOpFrame::doApply: a native transfer from the source to the new account.
	ac.transferEvent(Native, src.id, dest, nil, start)
	return createAccountResult(xdr.CreateAccountResultCodeCreateAccountSuccess), true
}

// payment credits the account a destination names: a muxed destination (SEP-23,
// KEY_TYPE_MUXED_ED25519) pays its ed25519 account, its id is not looked at
// (PaymentOpFrame::doApply: toAccountID(mPayment.destination)).
func (ac *applyCtx) payment(src *account, op xdr.PaymentOp, reserve int64) (xdr.OperationResult, bool) {
	destID := op.Destination.ToAccountId().Address()
	amount := int64(op.Amount)
	dest := ac.v.account(destID)
	if dest == nil {
		return paymentResult(xdr.PaymentResultCodePaymentNoDestination), false
	}
	asset := assetFromXDR(op.Asset)
	if asset.IsNative() {
		if src.balance-minBalance(src, reserve) < amount {
			return paymentResult(xdr.PaymentResultCodePaymentUnderfunded), false
		}
		if dest.id != src.id {
			if dest.balance > math.MaxInt64-amount {
				return paymentResult(xdr.PaymentResultCodePaymentLineFull), false
			}
			src.balance -= amount
			dest.balance += amount
		}
		// PaymentOpFrame::doApply: a native payment, to itself too (instantSuccess).
		ac.transferEvent(asset, src.id, destID, &op.Destination, amount)
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	// Destination side first, then source, as core's path payment does.
	var destTL, srcTL *trustline
	if destID != asset.Issuer {
		destTL = ac.v.trustline(destID, asset)
		if destTL == nil {
			return paymentResult(xdr.PaymentResultCodePaymentNoTrust), false
		}
		if destTL.balance > destTL.limit-amount {
			return paymentResult(xdr.PaymentResultCodePaymentLineFull), false
		}
	}
	if src.id != asset.Issuer {
		srcTL = ac.v.trustline(src.id, asset)
		if srcTL == nil {
			return paymentResult(xdr.PaymentResultCodePaymentSrcNoTrust), false
		}
		if srcTL.balance < amount {
			return paymentResult(xdr.PaymentResultCodePaymentUnderfunded), false
		}
	}
	// PathPaymentStrictReceiveOpFrame::doApply, which a credit payment runs: its final
	// eventForTransferWithIssuerCheck from the source to the destination.
	ac.transferEvent(asset, src.id, destID, &op.Destination, amount)
	if destTL != nil && srcTL != nil && destID == src.id {
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	if destTL != nil {
		pre := *destTL
		destTL.balance += amount
		destTL.lastModified = ac.ledger
		ac.changed(destID, asset, pre, *destTL)
	}
	if srcTL != nil {
		pre := *srcTL
		srcTL.balance -= amount
		srcTL.lastModified = ac.ledger
		ac.changed(src.id, asset, pre, *srcTL)
	}
	return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
}

func (ac *applyCtx) changeTrust(src *account, op xdr.ChangeTrustOp, reserve int64) (xdr.OperationResult, bool) {
	asset, _ := changeTrustAsset(op.Line) // validated at submission
	limit := int64(op.Limit)
	tl := ac.v.trustline(src.id, asset)
	if tl != nil {
		if limit == 0 {
			if tl.balance != 0 {
				return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustInvalidLimit), false
			}
			src.numSubEntries--
			if tl.sponsor != "" {
				if sp := ac.v.account(tl.sponsor); sp != nil {
					sp.numSponsoring--
				}
				src.numSponsored--
			}
			ac.v.setTrustline(src.id, asset, nil)
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess), true
		}
		if limit < tl.balance {
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustInvalidLimit), false
		}
		tl.limit = limit
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess), true
	}
	if limit == 0 {
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustTrustLineMissing), false
	}
	if ac.v.account(asset.Issuer) == nil {
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustNoIssuer), false
	}
	nt := &trustline{limit: limit}
	if sponsorID := ac.sponsors[src.id]; sponsorID != "" {
		sp := ac.v.account(sponsorID)
		if sp == nil || sp.balance-minBalance(sp, reserve) < reserve {
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustLowReserve), false
		}
		sp.numSponsoring++
		src.numSponsored++
		nt.sponsor = sponsorID
	} else if src.balance < minBalance(src, reserve)+reserve {
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustLowReserve), false
	}
	src.numSubEntries++
	ac.v.setTrustline(src.id, asset, nt)
	return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess), true
}

// changed lists a trustline's change in the operation's meta as stellar-core does for an entry an
// operation modified: LEDGER_ENTRY_STATE with the entry before, then LEDGER_ENTRY_UPDATED with
// it after (src/ledger/LedgerTxn.cpp, LedgerTxn::Impl::getChanges). Only a credit payment's
// trustlines are listed here (doc.go, "Not modelled").
func (ac *applyCtx) changed(id string, asset Asset, pre, post trustline) {
	before, err1 := pre.entryXDR(id, asset)
	after, err2 := post.entryXDR(id, asset)
	if err1 != nil || err2 != nil {
		return // unreachable: the account and asset were decoded from the operation
	}
	ac.changes = append(ac.changes,
		xdr.LedgerEntryChange{Type: xdr.LedgerEntryChangeTypeLedgerEntryState,
			State: &xdr.LedgerEntry{LastModifiedLedgerSeq: xdr.Uint32(pre.lastModified), Data: before}},
		xdr.LedgerEntryChange{Type: xdr.LedgerEntryChangeTypeLedgerEntryUpdated,
			Updated: &xdr.LedgerEntry{LastModifiedLedgerSeq: xdr.Uint32(post.lastModified), Data: after}})
}
