package connections_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestDisplayNameWithoutBidiControls (review 74b): the confirmation page
// says "Connect only if you are {display_name} and you started this
// yourself. If someone sent you this link, decline." A display name with
// a right-to-left override (a RuoYi nickname the service passes on)
// reversed the rest of that warning on the page, so the person handed
// the link read gibberish where they were told to decline. Such a name is
// refused, as the provider's account is (printable); a name in a
// right-to-left script, without controls, is a name.
func TestDisplayNameWithoutBidiControls(t *testing.T) {
	e := newEnv(t, testdb.Open(t, store.DialectSQLite), envOptions{})
	e.registerProvider()
	for _, name := range []string{"Bob \u202eenilced", "Bob\u2067", "\u200fBob", "Bob\u061c"} {
		code, out := e.do("POST", "/v1/connections/acme/authorize", serviceToken, map[string]any{"user_id": 7, "display_name": name})
		if code != http.StatusBadRequest || !strings.Contains(out["error"].(map[string]any)["message"].(string), "display_name") {
			t.Errorf("display_name %q: %d %v, want 400 naming display_name", name, code, out)
		}
	}
	if code, out := e.do("POST", "/v1/connections/acme/authorize", serviceToken, map[string]any{"user_id": 7, "display_name": "سارا احمدی"}); code != http.StatusOK {
		t.Errorf("a name in Arabic script: %d %v", code, out)
	}
}
