package stellar

// SetDayEventsPageForTest makes VaultDay ask getEvents for n events a page until the test ends
// (restore is called by t.Cleanup).
func SetDayEventsPageForTest(n uint) (restore func()) {
	old := dayEventsPage
	dayEventsPage = n
	return func() { dayEventsPage = old }
}
