package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestLeftOutRowSaysWhy: a sys_ai_plugin row written with SQL that
// fails the catalog's load check is left out, and was only logged: the
// administrator reading it (GET /v1/plugins/{name}, the list) saw a
// plugin like any other, nothing saying no caller could see or call it.
// Now both carry load_error, each field's error; the rows loaded carry
// none, and a per-user caller still finds no such tool.
func TestLeftOutRowSaysWhy(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		token, _, err := api.IssueToken(ctx, st, 7, "t", 0, "")
		if err != nil {
			t.Fatal(err)
		}
		const ins = "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, 'd', '{\"type\": \"object\"}', ?, '0')"
		for _, r := range [][2]string{
			{"good", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`},
			{"loose", `{"execution": {"method": "GET", "base_url": "https://api.example.com/{nope}"}}`},
		} {
			if _, err := st.DB().ExecContext(ctx, ins, r[0], r[1]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.changes.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		said := func(v any) string {
			s, _ := v.(map[string]any)["load_error"].(string)
			return s
		}
		code, loose := e.do("GET", "/v1/plugins/loose", adminToken, nil)
		if why := said(loose); code != http.StatusOK || !strings.Contains(why, "execution.base_url") {
			t.Errorf("GET of the row left out: %d, load_error %q; want each field's error", code, why)
		}
		if _, good := e.do("GET", "/v1/plugins/good", adminToken, nil); said(good) != "" {
			t.Errorf("a row loaded says %q", said(good))
		}
		_, list := e.do("GET", "/v1/plugins", adminToken, nil)
		for _, v := range list["plugins"].([]any) {
			name := v.(map[string]any)["name"]
			if why := said(v); (name == "loose") != (why != "") {
				t.Errorf("the list's %s: load_error %q", name, why)
			}
		}
		if code, _ := e.do("GET", "/v1/tools/loose", token, nil); code != http.StatusNotFound {
			t.Errorf("a per-user caller reading the row left out: %d, want 404", code)
		}
	})
}

// TestLeftOutRowSaysWhyInPlainText (review 75): a row's load_error names
// the fields that failed by their keys, written as the row holds them: a
// fixed param or a param_placement key holding terminal escapes or bidi
// controls reached the administrator's terminal raw (plugin get prints
// it on stderr: "\x1b]52;c;…\a" sets the clipboard) and reordered the
// console's sentence. Now a character that is not printable is written
// as its escape.
func TestLeftOutRowSaysWhyInPlainText(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	e := newEnv(t, st)
	ctx := context.Background()
	const ins = "INSERT INTO sys_ai_plugin (name, description, parameter_schema, execution_config, status) VALUES (?, 'd', '{\"type\": \"object\", \"properties\": {\"q\": {\"type\": \"string\"}}, \"additionalProperties\": false}', ?, '0')"
	for _, r := range [][2]string{
		{"placed", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x", "param_placement": {"q\u001b]52;c;cm0gLXJm\u0007\u202e": "path"}}}`},
		{"fixed", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x"}, "fixed_params": {"zz\u001b[2J\u202e\u200b": 1}}`},
	} {
		if _, err := st.DB().ExecContext(ctx, ins, r[0], r[1]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.changes.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"placed", "fixed"} {
		_, v := e.do("GET", "/v1/plugins/"+name, adminToken, nil)
		why, _ := v["load_error"].(string)
		if why == "" || strings.ContainsAny(why, "\x1b\a\u202e\u200b") {
			t.Errorf("%s: load_error %q; want the field named, its hidden characters escaped", name, why)
		}
	}
}

// TestUndecodedRowSaysWhy: a sys_ai_plugin row whose JSON column does not
// decode (RuoYi writes them with SQL) made GET /v1/plugins/{name} and the
// whole list (a page of it too, which the console reads) answer 500. Now
// the row is listed by its plain columns, load_error naming the row and
// the column, and the other rows as they are.
func TestUndecodedRowSaysWhy(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		ctx := context.Background()
		const ins = "INSERT INTO sys_ai_plugin (name, title, description, parameter_schema, execution_config, required_credentials, status) VALUES (?, 'T', 'd', '{\"type\": \"object\"}', ?, ?, '0')"
		for _, r := range [][3]any{
			{"good", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`, nil},
			{"garbled", `{"execution": "GET"}`, nil},
			{"badcreds", `{"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`, `{"k": 1}`},
		} {
			if _, err := st.DB().ExecContext(ctx, ins, r[0], r[1], r[2]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.changes.Poll(ctx); err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"garbled": "execution_config", "badcreds": "required_credentials"}
		said := func(v any) (string, string) {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			why, _ := m["load_error"].(string)
			return name, why
		}
		for name, col := range want {
			code, v := e.do("GET", "/v1/plugins/"+name, adminToken, nil)
			if _, why := said(v); code != http.StatusOK || !strings.Contains(why, col) || !strings.Contains(why, `"`+name+`"`) {
				t.Errorf("GET %s: %d, load_error %q; want the row and %s named", name, code, why, col)
			}
		}
		for _, path := range []string{"/v1/plugins", "/v1/plugins?limit=10"} {
			code, list := e.do("GET", path, adminToken, nil)
			got, _ := list["plugins"].([]any)
			if code != http.StatusOK || len(got) != 3 {
				t.Errorf("GET %s: %d, %d plugins; want the 3 rows", path, code, len(got))
				continue
			}
			for _, v := range got {
				if name, why := said(v); (want[name] == "") != (why == "") || !strings.Contains(why, want[name]) {
					t.Errorf("GET %s: %s's load_error %q", path, name, why)
				}
			}
		}
	})
}
