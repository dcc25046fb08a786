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
	// CreateAccountOpFrame::doApply: a lumen transfer from the source to the new account.
	ac.transferEvent(Native, src.id, dest, nil, start)
	return createAccountResult(xdr.CreateAccountResultCodeCreateAccountSuccess), true
}

// payment is stellar-core's PaymentOpFrame::doApply (src/transactions/PaymentOpFrame.cpp): a
// native payment to its own source succeeds at once; any other is applied as a path payment with
// no path (PathPaymentStrictReceiveOpFrame::doApply), whose codes map one to one onto the
// payment's. A muxed destination (SEP-23, KEY_TYPE_MUXED_ED25519) pays its ed25519 account, its id
// not looked at (toAccountID(mPayment.destination)). The order of the checks decides which code a
// payment that fails twice gets, so it is core's: the destination account
// (op_no_destination, unless the destination issues the asset: shouldBypassIssuerCheck), then
// the destination's side (PathPaymentOpFrameBase::updateDestBalance: native, room below INT64_MAX
// after buying liabilities, else op_line_full; credit, the trustline op_no_trust, its
// authorization op_not_authorized, room under its limit after buying liabilities op_line_full),
// and only then the source's (updateSourceBalance: native, the available balance above the
// reserve and selling liabilities, else op_underfunded; credit op_src_no_trust,
// op_src_not_authorized, op_underfunded below the selling liabilities). The destination is
// credited before the source is debited, both in the operation's own scope (applyTx), which a
// failure throws away. An issuer's side of its own asset has no line and always has room.
func (ac *applyCtx) payment(src *account, op xdr.PaymentOp, reserve int64) (xdr.OperationResult, bool) {
	r, ok := ac.movePayment(src, op, reserve)
	if ok {
		// PaymentOpFrame::doApply's instantSuccess (lumens to itself) and the
		// PathPaymentStrictReceiveOpFrame::doApply a payment otherwise runs each end with
		// eventForTransferWithIssuerCheck from the source to the destination (events.go).
		ac.transferEvent(assetFromXDR(op.Asset), src.id, op.Destination.ToAccountId().Address(), &op.Destination, int64(op.Amount))
	}
	return r, ok
}

// movePayment is payment's checks and balance changes.
func (ac *applyCtx) movePayment(src *account, op xdr.PaymentOp, reserve int64) (xdr.OperationResult, bool) {
	destID := op.Destination.ToAccountId().Address()
	amount := int64(op.Amount)
	asset := assetFromXDR(op.Asset)
	if asset.IsNative() && destID == src.id {
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	bypassIssuerCheck := !asset.IsNative() && destID == asset.Issuer
	if !bypassIssuerCheck && ac.v.account(destID) == nil {
		return paymentResult(xdr.PaymentResultCodePaymentNoDestination), false
	}
	// updateDestBalance.
	if asset.IsNative() {
		dest := ac.v.account(destID)
		if dest.balance > math.MaxInt64-amount || dest.balance+amount > math.MaxInt64-dest.buying {
			return paymentResult(xdr.PaymentResultCodePaymentLineFull), false
		}
		dest.balance += amount
	} else if destID != asset.Issuer {
		tl := ac.v.trustline(destID, asset)
		switch {
		case tl == nil:
			return paymentResult(xdr.PaymentResultCodePaymentNoTrust), false
		case tl.auth != Authorized:
			return paymentResult(xdr.PaymentResultCodePaymentNotAuthorized), false
		case tl.balance > tl.limit-amount || tl.balance+amount > tl.limit-tl.buying:
			return paymentResult(xdr.PaymentResultCodePaymentLineFull), false
		}
		pre := *tl
		tl.balance += amount
		tl.lastModified = ac.ledger
		if destID != src.id {
			ac.changed(destID, asset, pre, *tl)
		}
	}
	// updateSourceBalance: src is re-read from the scope, where the destination's credit (a
	// payment to itself) is already written.
	src = ac.v.account(src.id)
	if asset.IsNative() {
		if amount > src.balance-minBalance(src, reserve)-src.selling {
			return paymentResult(xdr.PaymentResultCodePaymentUnderfunded), false
		}
		src.balance -= amount
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	if src.id == asset.Issuer {
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	tl := ac.v.trustline(src.id, asset)
	switch {
	case tl == nil:
		return paymentResult(xdr.PaymentResultCodePaymentSrcNoTrust), false
	case tl.auth != Authorized:
		return paymentResult(xdr.PaymentResultCodePaymentSrcNotAuthorized), false
	case tl.balance-amount < tl.selling:
		return paymentResult(xdr.PaymentResultCodePaymentUnderfunded), false
	}
	pre := *tl
	tl.balance -= amount
	tl.lastModified = ac.ledger
	if destID != src.id {
		// A payment to its own line changes nothing: its meta lists no change.
		ac.changed(src.id, asset, pre, *tl)
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
