package console

import (
	"net/http"
	"net/netip"
)

// ClientAddr is clientAddr of a request from remote with X-Forwarded-For
// xff ("" for none).
func ClientAddr(remote, xff string, trusted []netip.Prefix) string {
	r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
	if xff != "" {
		r.Header.Set("X-Forwarded-For", xff)
	}
	return clientAddr(r, trusted)
}
