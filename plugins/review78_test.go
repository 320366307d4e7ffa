package plugins_test

import (
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

// TestBaseURLRefusedWithoutItsPassword (review78): a base_url refused
// was quoted whole in the error (the API's answer, an import's failed
// list, the log), a password in its userinfo with it.
func TestBaseURLRefusedWithoutItsPassword(t *testing.T) {
	const secret = "pw-Quoted4Zr"
	for _, base := range []string{
		"https://u:" + secret + "@ho st/v1",
		"ftp://u:" + secret + "@host/v1",
		"https://u:" + secret + "@{tenant}.example/v1",
	} {
		_, err := plugins.ParseJSON([]byte(`{"name":"p","description":"d","parameters":{"type":"object"},"execution":{"method":"GET","base_url":"` + base + `"}}`))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("base_url %s: %v", base, err)
		}
	}
}
