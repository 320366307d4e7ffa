package console_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
)

// TestConsoleShowsLeftOut: a plugin row written with SQL that breaks
// the protocol (a base_url template no parameter fills) is left out of
// the catalog; its page showed it as any other. Now the page says it is
// left out and why, the field named, in English and Chinese, and the
// editable document does not carry the engine's reason. The catalog's
// list (leftovers 75 found it showed such a row as any enabled one) marks
// it and says why too, as text: a key written as HTML stays text.
func TestConsoleShowsLeftOut(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	if _, err := st.DB().ExecContext(context.Background(), "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, '0')",
		"loose", "Added by SQL.", `{"type": "object"}`, `{"execution": {"method": "GET", "base_url": "https://ruoyi.example/{nope}"}}`); err != nil {
		t.Fatal(err)
	}
	if _, err := st.DB().ExecContext(context.Background(), "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, '0')",
		"marked", "Added by SQL.", `{"type": "object", "additionalProperties": false}`,
		`{"execution": {"method": "GET", "base_url": "https://ruoyi.example/x"}, "fixed_params": {"<img src=x id=injected>": 1}}`); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	row := func(name string) string {
		return eval[string](tb, `[...document.querySelectorAll('table.catalog tbody tr')].find((r) => r.querySelector('td.name')?.textContent === `+strconv.Quote(name)+`)?.querySelector('td.status')?.textContent ?? ''`)
	}
	tb.open(e.url, "catalog", "catalog")
	if s := row("loose"); !strings.Contains(s, "left out") || !strings.Contains(s, "execution.base_url") {
		t.Errorf("the catalog's row reads %q, want it marked left out and why", s)
	}
	if s := row("marked"); !strings.Contains(s, "left out") || !strings.Contains(s, "<img src=x id=injected>") {
		t.Errorf("the catalog's row reads %q, want the key as text", s)
	}
	if eval[bool](tb, `document.querySelector('#injected') !== null`) {
		t.Errorf("the reason was drawn as HTML")
	}
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
	tb.open(e.url, "catalog", "catalog")
	if s := row("loose"); !strings.Contains(s, "未载入") || !strings.Contains(s, "execution.base_url") {
		t.Errorf("the catalog's row in Chinese reads %q", s)
	}
	tb.open(e.url, "plugin/loose", "plugin")
	if s := leftOut(); !strings.Contains(s, "未载入目录。") || !strings.Contains(s, "execution.base_url") {
		t.Errorf("the page in Chinese reads %q", s)
	}
}
