package stellar

// NameSorobanFeeForTest makes l's Soroban lane read as surge priced for FeeHintTTL, as if the
// network had just named rate stroops per operation slot for it (refusedAsTooLow): the tests of a
// contract call's replacement by fee need a surged Soroban lane, which the local network's
// background traffic (classic payments) never makes.
func NameSorobanFeeForTest(l *RPCLedger, rate int64) {
	fc := l.fees
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.hints[laneSoroban] = feeHint{rate: rate, until: l.clock.Now().Add(FeeHintTTL)}
}
