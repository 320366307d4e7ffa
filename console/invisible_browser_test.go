package console_test

import (
	"context"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/invisible/invisibletest"
	"github.com/blindexec/blindexec/internal/testdb"
)

// TestConsoleShowsInvisibleRemoved (issue 44 point 7): a plugin row
// written with SQL, its description smuggling tag characters, shows on
// its page without them — the text the model reads — with a warning
// naming the field, the count and the kind, and a mark in the catalog.
func TestConsoleShowsInvisibleRemoved(t *testing.T) {
	needBrowser(t)
	st := testdb.Open(t, "sqlite")
	smuggled := invisibletest.Tags(invisibletest.Instruction)
	if _, err := st.DB().ExecContext(context.Background(), "INSERT INTO sys_ai_plugin (name, title, description, parameter_schema, execution_config, status) VALUES (?, ?, ?, ?, ?, '0')",
		"ruoyi_tool", "RuoYi tool", "Added by SQL."+smuggled, `{"type": "object"}`, `{"execution": {"method": "GET", "base_url": "https://ruoyi.example/t"}}`); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, st, newMasterKey())
	tb := newTab(t)
	tb.signIn(e.url, adminToken)
	tb.waitPage("catalog")
	if s := tb.text("#page table .badge.warn"); s == "" {
		t.Errorf("the catalog marks no row")
	}
	tb.open(e.url, "plugin/ruoyi_tool", "plugin")
	if s := tb.text("#page .description"); s != "Added by SQL." {
		t.Errorf("the page shows the description %+q, want the text the model reads", s)
	}
	if s := tb.text("#plugin-invisible"); !strings.Contains(s, "description: 28 (tag)") {
		t.Errorf("the warning reads %q, want the field, count and kind", s)
	}
	if strings.Contains(eval[string](tb, `document.querySelector('#plugin-doc').value`), "invisible_removed") {
		t.Errorf("the editable document carries the engine's report")
	}
}
