package api_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestImportURLPasswordWithSlashNeverShown (review79): a password with
// a /, ? or # written as it is (`http://user:Qm4/Zk81@host/spec.json`, a
// generated password pasted unencoded) ends the URL's authority before
// its @: net/url refuses the URL (`invalid port ":Qm4"`), and the
// redaction, which looked for userinfo in the authority only, found none
// and quoted the URL whole, the password in the answer and the logs.
func TestImportURLPasswordWithSlashNeverShown(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		for _, pw := range []string{"Qm4e/Zk81Qx", "Qm4e?Zk81Qx", "Qm4e#Zk81Qx"} {
			code, res := e.do("POST", "/v1/plugins/import/openapi", adminToken, map[string]any{"url": "http://user:" + pw + "@127.0.0.1:1/spec.json"})
			if s := fmt.Sprint(res); strings.Contains(s, "Qm4e") || strings.Contains(s, "Zk81Qx") || code < 400 {
				t.Errorf("password %s: the answer: %d %v", pw, code, res)
			}
		}
		if l := e.logs.String(); strings.Contains(l, "Qm4e") || strings.Contains(l, "Zk81Qx") {
			t.Errorf("the logs hold the password: %s", l)
		}
	})
}
