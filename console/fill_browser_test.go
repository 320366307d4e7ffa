package console_test

import (
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestFillTakesValuesAsText: the console's sentences take their values
// (an upstream's error, a tool's name) as text. String.replace read `$&`
// and `$'` in a value as patterns, repeating the sentence's own words,
// and a value naming another placeholder (`{total}`) was filled in turn.
func TestFillTakesValuesAsText(t *testing.T) {
	needBrowser(t)
	e := newEnv(t, testdb.Open(t, "sqlite"), newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	got := eval[string](tb, `fill('range', { from: "$&$'", to: '{total}', total: '9' })`)
	if want := "$&$'–{total} of 9"; got != want {
		t.Errorf("fill = %q, want %q", got, want)
	}
}
