package auth

import "time"

// SetClock replaces the clock of token expiry, for tests.
func (a *Authenticator) SetClock(now func() time.Time) { a.now = now }
