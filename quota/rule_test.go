package quota

import (
	"errors"
	"testing"
	"time"

	"github.com/blindexec/blindexec/plugins"
)

func TestValidate(t *testing.T) {
	seven := int64(7)
	neg := int64(-1)
	for _, tc := range []struct {
		name  string
		rule  Rule
		field string // "": valid
	}{
		{"every tool", Rule{Name: "all", Calls: 100, Window: Day}, ""},
		{"one user's refunds", Rule{Name: "refund-7", UserID: &seven, Plugins: []string{"refund"}, Calls: 20, Window: Day}, ""},
		{"tags", Rule{Name: "orders", Tags: []string{"orders"}, Calls: 10, Window: Minute}, ""},
		{"consequential", Rule{Name: "writes", Consequential: true, Calls: 10, Window: Hour}, ""},
		{"run tokens", Rule{Name: "tokens", RunTokensPerDay: 200000}, ""},
		{"no name", Rule{Calls: 1, Window: Day}, "name"},
		{"name with a space", Rule{Name: "a b", Calls: 1, Window: Day}, "name"},
		{"negative user", Rule{Name: "a", UserID: &neg, Calls: 1, Window: Day}, "user_id"},
		{"no calls", Rule{Name: "a", Window: Day}, "calls"},
		{"week", Rule{Name: "a", Calls: 1, Window: "week"}, "window"},
		{"two selectors", Rule{Name: "a", Calls: 1, Window: Day, Plugins: []string{"x"}, Consequential: true}, "plugins"},
		{"empty plugin", Rule{Name: "a", Calls: 1, Window: Day, Plugins: []string{""}}, "plugins[0]"},
		{"run rule with calls", Rule{Name: "a", Calls: 1, RunTokensPerDay: 5}, "run_tokens_per_day"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rule.Validate()
			var fe *FieldError
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("valid rule refused: %v", err)
			case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
				t.Fatalf("got %v, want an error on %s", err, tc.field)
			}
			if tc.field == "" {
				back, err := FromRow(tc.rule.Row())
				if err != nil || back.Name != tc.rule.Name || back.Calls != tc.rule.Calls || len(back.Plugins) != len(tc.rule.Plugins) {
					t.Fatalf("row round trip: %+v, %v", back, err)
				}
			}
		})
	}
}

func TestWindowOf(t *testing.T) {
	load := func(name string) *time.Location {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	at := time.Date(2026, 11, 26, 23, 30, 15, 0, time.UTC) // 07:30 the 27th in Shanghai
	for _, tc := range []struct {
		window, zone string
		start, end   string
	}{
		{Day, "UTC", "2026-11-26T00:00:00Z", "2026-11-27T00:00:00Z"},
		{Day, "Asia/Shanghai", "2026-11-27T00:00:00+08:00", "2026-11-28T00:00:00+08:00"},
		{Hour, "Asia/Kolkata", "2026-11-27T05:00:00+05:30", "2026-11-27T06:00:00+05:30"},
		{Minute, "Asia/Shanghai", "2026-11-27T07:30:00+08:00", "2026-11-27T07:31:00+08:00"},
	} {
		start, end := WindowOf(at, tc.window, load(tc.zone))
		if s, e := start.Format(time.RFC3339), end.Format(time.RFC3339); s != tc.start || e != tc.end {
			t.Errorf("%s in %s: [%s, %s), want [%s, %s)", tc.window, tc.zone, s, e, tc.start, tc.end)
		}
	}
	// A day with a DST change is 23 hours long, and still ends at midnight.
	ny := load("America/New_York")
	start, end := WindowOf(time.Date(2026, 3, 8, 12, 0, 0, 0, ny), Day, ny)
	if end.Sub(start) != 23*time.Hour || end.Hour() != 0 {
		t.Errorf("DST day: [%s, %s)", start, end)
	}
}

func TestConsequential(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		exec    plugins.Execution
		setting *bool // the plugin's consequential setting (issue 33)
		want    bool
	}{
		{plugins.Execution{Method: "GET"}, nil, false},
		{plugins.Execution{Method: "head"}, nil, false},
		{plugins.Execution{Method: "OPTIONS"}, nil, false},
		{plugins.Execution{Method: "POST"}, nil, true},
		{plugins.Execution{Method: "DELETE"}, nil, true},
		{plugins.Execution{Type: plugins.TypeMCP}, nil, true},
		{plugins.Execution{Method: "POST"}, &no, false}, // a search sent as POST, marked by the administrator
		{plugins.Execution{Method: "GET"}, &yes, true},  // a GET that triggers a job
	} {
		if got := Consequential(&plugins.Plugin{Execution: tc.exec, Consequential: tc.setting}); got != tc.want {
			t.Errorf("%+v (setting %v): %v, want %v", tc.exec, tc.setting, got, tc.want)
		}
	}
}

func TestExceededMessage(t *testing.T) {
	sh, _ := time.LoadLocation("Asia/Shanghai")
	e := &ExceededError{Calls: 20, Window: Day, What: "refund", ResetsAt: time.Date(2026, 11, 28, 0, 0, 0, 0, sh)}
	if want := "limit reached: 20 calls a day for refund, resets at 2026-11-28T00:00:00+08:00"; e.Error() != want {
		t.Errorf("%q, want %q", e.Error(), want)
	}
	e.Window = Hour
	if want := "limit reached: 20 calls an hour for refund, resets at 2026-11-28T00:00:00+08:00"; e.Error() != want {
		t.Errorf("%q, want %q", e.Error(), want)
	}
}
