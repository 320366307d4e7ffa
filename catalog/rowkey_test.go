package catalog

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/blindexec/blindexec/store"
)

// keyedRow has every column set, and parses.
func keyedRow() store.Plugin {
	src, cons, perms, skey, hash := int64(7), "1", "system:user:list", "k", "h"
	return store.Plugin{ID: 3, Name: "op", Title: "Op", Description: "d", IconURL: "https://example.com/i.png",
		ParameterSchema: store.JSON(`{"type":"object"}`), ExecutionConfig: store.JSON(`{"execution":{"method":"GET","base_url":"https://api.example.com/x"}}`),
		Status: store.StatusEnabled, RequiredCredentials: store.JSON(`[]`), SourceID: &src, SourceKey: &skey, ContentHash: &hash,
		Consequential: &cons, Perms: &perms,
		Audit: store.Audit{CreateBy: "a", CreateTime: time.Unix(1, 0), UpdateBy: "b", UpdateTime: time.Unix(2, 0), Remark: "r"}}
}

// unkeyed are the columns PluginFromRow does not read: the key leaves
// them out, so a sync's new content_hash or an update_time alone does
// not decide a row again.
var unkeyed = map[string]bool{"SourceKey": true, "ContentHash": true, "CreateBy": true, "CreateTime": true, "UpdateBy": true, "UpdateTime": true}

// TestRowKeyCoversEveryColumn changes each column of a row in turn (by
// reflection, so a column added to store.Plugin is changed too): the key
// changes, or the column is unkeyed and the plugin PluginFromRow makes
// of the row does not change. A column read but not keyed would let a
// changed row keep the decision on its old content.
func TestRowKeyCoversEveryColumn(t *testing.T) {
	base := keyedRow()
	baseKey, _ := keyOf(&base, nil)
	want, err := PluginFromRow(&base)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range leaves(reflect.TypeOf(base), nil) {
		for _, change := range []bool{false, true} { // to another value, then to the zero value
			row := keyedRow()
			f := reflect.ValueOf(&row).Elem().FieldByIndex(path)
			name := reflect.TypeOf(row).FieldByIndex(path).Name
			if change {
				f.SetZero()
			} else {
				other(t, name, f)
			}
			key, _ := keyOf(&row, nil)
			if key != baseKey {
				if unkeyed[name] {
					t.Errorf("%s is keyed: take it out of unkeyed", name)
				}
				continue
			}
			if !unkeyed[name] {
				t.Errorf("the key does not change with %s: add it to keyOf", name)
				continue
			}
			if got, err := PluginFromRow(&row); err != nil || !reflect.DeepEqual(got, want) {
				t.Errorf("%s is not keyed but PluginFromRow reads it (%v): add it to keyOf", name, err)
			}
		}
	}
}

// leaves are the index paths of t's fields, inside embedded structs.
func leaves(t reflect.Type, at []int) [][]int {
	var out [][]int
	for i := range t.NumField() {
		f := t.Field(i)
		path := append(append([]int(nil), at...), i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			out = append(out, leaves(f.Type, path)...)
			continue
		}
		out = append(out, path)
	}
	return out
}

// other sets f, a column of keyedRow, to another non-zero value.
func other(t *testing.T, name string, f reflect.Value) {
	switch v := f.Addr().Interface().(type) {
	case *string:
		*v += "x"
	case *int64:
		*v++
	case *store.JSON:
		*v = store.JSON(`{"type":"object","x":1}`)
	case **string:
		s := **v + "x"
		*v = &s
	case **int64:
		n := **v + 1
		*v = &n
	case *time.Time:
		*v = v.Add(time.Second)
	default:
		t.Fatalf("column %s of type %s: teach other to change it", name, f.Type())
	}
}

// TestRowKeyColumnsDoNotRunTogether: a byte moved from one column to the
// next, or an empty column in place of a missing one, is another key.
func TestRowKeyColumnsDoNotRunTogether(t *testing.T) {
	empty := ""
	for _, c := range []struct {
		name string
		a, b func(*store.Plugin)
	}{
		{"title into description", func(r *store.Plugin) { r.Title, r.Description = "ab", "" }, func(r *store.Plugin) { r.Title, r.Description = "a", "b" }},
		{"schema into config", func(r *store.Plugin) { r.ParameterSchema, r.ExecutionConfig = store.JSON(`{}{}`), nil },
			func(r *store.Plugin) { r.ParameterSchema, r.ExecutionConfig = store.JSON(`{}`), store.JSON(`{}`) }},
		// Bytes that read as the next column's length, where a column
		// has none.
		{"config into status", func(r *store.Plugin) { r.ExecutionConfig, r.Status = store.JSON("{}\x02"), "" },
			func(r *store.Plugin) { r.ExecutionConfig, r.Status = store.JSON("{}"), "\x01" }},
		{"NULL perms or empty", func(r *store.Plugin) { r.Perms = nil }, func(r *store.Plugin) { r.Perms = &empty }},
		{"NULL consequential or empty", func(r *store.Plugin) { r.Consequential = nil }, func(r *store.Plugin) { r.Consequential = &empty }},
	} {
		a, b := keyedRow(), keyedRow()
		c.a(&a)
		c.b(&b)
		ka, _ := keyOf(&a, nil)
		kb, _ := keyOf(&b, nil)
		if ka == kb {
			t.Errorf("%s: same key", c.name)
		}
	}
}

// rowsAt is a Source whose rows the test changes, moving its version.
type rowsAt struct {
	rows    []store.Plugin
	version int64
}

func (r *rowsAt) ListPlugins(context.Context, store.PluginFilter) ([]store.Plugin, error) {
	return slices.Clone(r.rows), nil
}

func (r *rowsAt) Current() store.Versions { return store.Versions{Plugins: r.version} }

// TestReloadDecidesOnlyChangedRows: a reload takes what it made of a row
// whose columns did not change, converts and decides again on one that changed
// (a row made invalid with plain SQL is left out at once), and holds
// decisions for the rows of the last load only.
func TestReloadDecidesOnlyChangedRows(t *testing.T) {
	ctx := context.Background()
	a, b := keyedRow(), keyedRow()
	b.ID, b.Name = 4, "other"
	src := &rowsAt{rows: []store.Plugin{a, b}, version: 1}
	cat := New(src, src, slog.New(slog.DiscardHandler))
	if ps, err := cat.Plugins(ctx); err != nil || len(ps) != 2 {
		t.Fatalf("first load: %d plugins, %v", len(ps), err)
	}
	// The decision held for b's content is the one a reload takes: b is
	// not decided again while it does not change.
	kb, _ := keyOf(&b, nil)
	d := cat.decided[kb]
	d.err = errors.New("held")
	cat.decided[kb] = d
	src.rows[0].ExecutionConfig = store.JSON(`{"execution":{"method":"FETCH","base_url":"https://api.example.com/x"}}`)
	src.version++
	if ps, err := cat.Plugins(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("a changed to FETCH, b held refused: %d plugins, %v", len(ps), err)
	}
	if len(cat.decided) != 2 {
		t.Errorf("%d decisions held for 2 rows", len(cat.decided))
	}
	src.rows = src.rows[1:]
	src.rows[0].Description = "changed"
	src.version++
	if ps, err := cat.Plugins(ctx); err != nil || len(ps) != 1 {
		t.Fatalf("b changed, decided again: %d plugins, %v", len(ps), err)
	}
	if len(cat.decided) != 1 {
		t.Errorf("%d decisions held for 1 row", len(cat.decided))
	}
}
