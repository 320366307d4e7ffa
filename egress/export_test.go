package egress

import "net/http"

// TransportOf is the *http.Transport behind NewTransport's guard.
func TransportOf(rt http.RoundTripper) *http.Transport { return rt.(plaintextGuard).next }
