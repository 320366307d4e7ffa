package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestConsoleShowsLeftOut: a plugin row written with SQL that breaks
// the protocol (a base_url template no parameter fills) is left out of
// the catalog; its page showed it as any other. Now the page says it is
// left out and why, the field named, in English and Chinese, and the
// editable document does not carry the engine's reason.
func TestConsoleShowsLeftOut(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	if _, err := st.DB().ExecContext(context.Background(), "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, '0')",
		"loose", "Added by SQL.", `{"type": "object"}`, `{"execution": {"method": "GET", "base_url": "https://ruoyi.example/{nope}"}}`); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	// The page is drawn whole once ready: a box it lacks is read as "".
	leftOut := func() string {
		return eval[string](tb, `document.querySelector('#plugin-left-out')?.textContent ?? ''`)
	}
	tb.open(e.url, "plugin/loose", "plugin")
	if s := leftOut(); !strings.Contains(s, "Left out of the catalog.") || !strings.Contains(s, "execution.base_url") {
		t.Errorf("the page reads %q, want it left out and why", s)
	}
	if strings.Contains(eval[string](tb, `document.querySelector('#plugin-doc').value`), "load_error") {
		t.Errorf("the editable document carries the engine's reason")
	}
	tb.setLang("zh-CN")
	tb.open(e.url, "plugin/loose", "plugin")
	if s := leftOut(); !strings.Contains(s, "未载入目录。") || !strings.Contains(s, "execution.base_url") {
		t.Errorf("the page in Chinese reads %q", s)
	}
}
