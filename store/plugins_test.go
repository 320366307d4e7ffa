package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestPluginLifecycle(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		src := int64(7)
		key := "GET /weather"
		p := &store.Plugin{
			Name:                "get_weather",
			Title:               "Weather",
			Description:         "天气 lookup",
			ParameterSchema:     store.JSON(`{"type":"object","properties":{"city":{"type":"string"}}}`),
			ExecutionConfig:     store.JSON(`{"execution":{"method":"GET"},"auth_config":{"type":"none"}}`),
			RequiredCredentials: store.JSON(`["api_key"]`),
			SourceID:            &src,
			SourceKey:           &key,
			Audit:               store.Audit{CreateBy: "admin"},
		}
		if err := s.CreatePlugin(ctx, p); err != nil {
			t.Fatalf("CreatePlugin: %v", err)
		}
		if p.ID == 0 || p.CreateTime.IsZero() || p.Status != store.StatusEnabled {
			t.Fatalf("CreatePlugin left ID=%d CreateTime=%v Status=%q", p.ID, p.CreateTime, p.Status)
		}

		got, err := s.GetPlugin(ctx, "get_weather")
		if err != nil {
			t.Fatalf("GetPlugin: %v", err)
		}
		if got.ID != p.ID || got.Title != p.Title || got.Description != p.Description ||
			got.Status != store.StatusEnabled || got.CreateBy != "admin" ||
			got.SourceID == nil || *got.SourceID != src || got.SourceKey == nil || *got.SourceKey != key ||
			got.ContentHash != nil || !got.CreateTime.Equal(p.CreateTime) {
			t.Errorf("GetPlugin = %+v, want %+v", got, p)
		}
		for _, c := range []struct{ got, want store.JSON }{
			{got.ParameterSchema, p.ParameterSchema},
			{got.ExecutionConfig, p.ExecutionConfig},
			{got.RequiredCredentials, p.RequiredCredentials},
		} {
			if !jsonEqual(t, c.got, c.want) {
				t.Errorf("JSON column = %s, want %s", c.got, c.want)
			}
		}

		wantErrIs(t, "CreatePlugin duplicate", s.CreatePlugin(ctx, &store.Plugin{Name: "get_weather"}), store.ErrDuplicate)
		// Names are exact: a case variant is another plugin, on MySQL too.
		if err := s.CreatePlugin(ctx, &store.Plugin{Name: "Get_Weather"}); err != nil {
			t.Errorf("CreatePlugin case variant: %v", err)
		}
		_, err = s.GetPlugin(ctx, "GET_WEATHER")
		wantErrIs(t, "GetPlugin other case", err, store.ErrNotFound)

		// Update by name, twice with identical values (MySQL reports zero
		// changed rows for the second unless found rows are counted).
		upd := *got
		upd.ID = 0
		upd.Title = "Weather v2"
		upd.ParameterSchema = nil
		upd.UpdateBy = "ops"
		for range 2 {
			if err := s.UpdatePlugin(ctx, &upd); err != nil {
				t.Fatalf("UpdatePlugin by name: %v", err)
			}
		}
		got, _ = s.GetPlugin(ctx, "get_weather")
		if got.Title != "Weather v2" || got.ParameterSchema != nil || got.UpdateBy != "ops" || got.CreateBy != "admin" {
			t.Errorf("after update: %+v", got)
		}

		// Update by id renames; renaming onto a taken name is a duplicate.
		upd.ID = p.ID
		upd.Name = "Get_Weather"
		wantErrIs(t, "rename onto taken name", s.UpdatePlugin(ctx, &upd), store.ErrDuplicate)
		upd.Name = "weather"
		if err := s.UpdatePlugin(ctx, &upd); err != nil {
			t.Fatalf("UpdatePlugin by id: %v", err)
		}
		if _, err := s.GetPlugin(ctx, "weather"); err != nil {
			t.Errorf("renamed plugin: %v", err)
		}
		wantErrIs(t, "UpdatePlugin missing", s.UpdatePlugin(ctx, &store.Plugin{Name: "nope"}), store.ErrNotFound)

		if err := s.SetPluginStatus(ctx, "weather", store.StatusDisabled, "ops"); err != nil {
			t.Fatalf("SetPluginStatus: %v", err)
		}
		if got, _ := s.GetPlugin(ctx, "weather"); got.Status != store.StatusDisabled {
			t.Errorf("status = %q, want disabled", got.Status)
		}
		if err := s.SetPluginStatus(ctx, "weather", "x", "ops"); err == nil {
			t.Error("SetPluginStatus with invalid status succeeded")
		}
		wantErrIs(t, "SetPluginStatus missing", s.SetPluginStatus(ctx, "nope", store.StatusEnabled, ""), store.ErrNotFound)

		if err := s.DeletePlugin(ctx, "weather"); err != nil {
			t.Fatalf("DeletePlugin: %v", err)
		}
		wantErrIs(t, "DeletePlugin again", s.DeletePlugin(ctx, "weather"), store.ErrNotFound)
		_, err = s.GetPlugin(ctx, "weather")
		wantErrIs(t, "GetPlugin deleted", err, store.ErrNotFound)

		if err := s.CreatePlugin(ctx, &store.Plugin{Name: "bad", ParameterSchema: store.JSON(`{`)}); err == nil {
			t.Error("CreatePlugin with invalid JSON succeeded")
		}
	})
}

func TestPluginNullColumns(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// A row as RuoYi's own tooling might write it: optional columns NULL.
		if _, err := s.DB().ExecContext(ctx, "INSERT INTO sys_ai_plugin (name) VALUES ('bare')"); err != nil {
			t.Fatal(err)
		}
		p, err := s.GetPlugin(ctx, "bare")
		if err != nil {
			t.Fatalf("GetPlugin of a row with NULLs: %v", err)
		}
		if p.Status != store.StatusEnabled || p.Title != "" || p.ParameterSchema != nil || p.SourceID != nil {
			t.Errorf("GetPlugin = %+v", p)
		}
	})
}

func TestListPlugins(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		src1, src2 := int64(1), int64(2)
		for _, p := range []store.Plugin{
			{Name: "b_tool", Status: store.StatusEnabled, SourceID: &src1},
			{Name: "a_tool", Status: store.StatusDisabled, SourceID: &src1},
			{Name: "C_tool", Status: store.StatusEnabled, SourceID: &src2},
			{Name: "d_tool", Status: store.StatusEnabled},
		} {
			if err := s.CreatePlugin(ctx, &p); err != nil {
				t.Fatalf("CreatePlugin %s: %v", p.Name, err)
			}
		}
		tests := []struct {
			name   string
			filter store.PluginFilter
			want   []string
		}{
			// Byte order, as on SQLite: upper case sorts first.
			{"all", store.PluginFilter{}, []string{"C_tool", "a_tool", "b_tool", "d_tool"}},
			{"enabled", store.PluginFilter{Status: store.StatusEnabled}, []string{"C_tool", "b_tool", "d_tool"}},
			{"disabled", store.PluginFilter{Status: store.StatusDisabled}, []string{"a_tool"}},
			{"source 1", store.PluginFilter{SourceID: &src1}, []string{"a_tool", "b_tool"}},
			{"enabled from source 1", store.PluginFilter{Status: store.StatusEnabled, SourceID: &src1}, []string{"b_tool"}},
		}
		for _, tt := range tests {
			ps, err := s.ListPlugins(ctx, tt.filter)
			if err != nil {
				t.Fatalf("%s: ListPlugins: %v", tt.name, err)
			}
			if got := pluginNames(ps); !slices.Equal(got, tt.want) {
				t.Errorf("%s: ListPlugins = %v, want %v", tt.name, got, tt.want)
			}
		}

		ps, err := s.GetPluginsByName(ctx, []string{"d_tool", "missing", "a_tool"})
		if err != nil {
			t.Fatalf("GetPluginsByName: %v", err)
		}
		if got, want := pluginNames(ps), []string{"a_tool", "d_tool"}; !slices.Equal(got, want) {
			t.Errorf("GetPluginsByName = %v, want %v", got, want)
		}
		if ps, err := s.GetPluginsByName(ctx, nil); err != nil || len(ps) != 0 {
			t.Errorf("GetPluginsByName(nil) = %v, %v", ps, err)
		}
	})
}

func pluginNames(ps []store.Plugin) []string {
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return names
}
