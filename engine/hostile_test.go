package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/plugins"
)

// Issue 13, point 1: arguments past ArgumentLimits are refused, naming the
// limit, and nothing is sent.
func TestArgumentLimits(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"q":{}}},
	  "execution":{"method":"POST","base_url":"%s/x"}}`, up.URL)
	deep := func(n int) string { return `{"q":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}` }
	wide := `{"q":[` + strings.Repeat("0,", ArgumentLimits.Elements) + `0]}`
	h := newHarness(t)
	for _, tc := range []struct {
		name, args, limit string
	}{
		{"100,000 deep", deep(100_000), jsonlimit.LimitDepth},
		{"one past the depth", deep(ArgumentLimits.Depth), jsonlimit.LimitDepth},
		{"too many elements", wide, jsonlimit.LimitElements},
	} {
		res, err := h.call(t, p, tc.args, nil)
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Code != CodeInvalidArguments {
			t.Fatalf("%s: got %v, want a refusal", tc.name, err)
		}
		d, _ := refused.Details.(map[string]any)
		if d["limit"] != tc.limit || !strings.Contains(res.Error.Message, "limit of") {
			t.Errorf("%s: %s %v does not name the %s limit", tc.name, res.Error.Message, refused.Details, tc.limit)
		}
	}
	if n := len(up.Hits()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
	// At the limit (the object itself is one level): accepted.
	if res, err := h.call(t, p, deep(ArgumentLimits.Depth-1), nil); err != nil || !res.OK {
		t.Fatalf("at the limit: %v %s", err, resultJSON(t, res))
	}
}

// Issue 13, point 4: a path value that is, or holds between slashes, a
// "." or ".." segment in any encoding is refused before sending.
func TestDotSegmentsRefused(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d",
	  "parameters":{"type":"object","properties":{"id":{}},"required":["id"]},
	  "execution":{"method":"GET","base_url":"%s/users/{id}/repos"}}`, up.URL)
	h := newHarness(t)
	for _, v := range []any{
		".", "..", "%2e", "%2E%2e", ".%2e", "%252e%252e", "%25252e%25252e", "%u002e%u002E",
		"\uff0e\uff0e", "\u2024\u2024", "%c0%ae%c0%ae", "%e0%80%ae.", "..;", "..;x=1",
		"../admin", "a/../../b", `..\admin`, "%2e%2e%2fadmin", "..%2F..%2Fadmin?x=1#f", "a%5c..%5cb",
		[]any{"a", ".."}, map[string]any{"..": "x"}, map[string]any{"k": "%2e%2e"},
	} {
		args, _ := json.Marshal(map[string]any{"id": v})
		res, err := h.call(t, p, string(args), nil)
		var refused *RefusedError
		if !errors.As(err, &refused) || refused.Code != CodeInvalidArguments || !strings.Contains(res.Error.Message, ". or ..") {
			t.Errorf("%q: %v %s, want refused", v, err, resultJSON(t, res))
		}
	}
	if n := len(up.Hits()); n != 0 {
		t.Fatalf("%d requests sent", n)
	}
	for _, v := range []string{"...", "v1.2..3", "a.b", ".hidden", "..x", "%2e%2e%2e", "a%2Fb"} {
		args, _ := json.Marshal(map[string]any{"id": v})
		if res, err := h.call(t, p, string(args), nil); err != nil || !res.OK {
			t.Errorf("%q: %v %s, want sent", v, err, resultJSON(t, res))
		}
	}
}

// Issue 13, point 5: inline plugins share one label value, catalog names
// past MaxPluginLabels share "other": the series stay bounded whatever
// callers send.
func TestMetricsCardinality(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20_000 {
		m.observe(&plugins.Plugin{Name: fmt.Sprintf("inline_%d", i)}, "ok", time.Millisecond)
	}
	for i := range MaxPluginLabels + 5 {
		m.observe(&plugins.Plugin{Name: fmt.Sprintf("cat_%d", i), Catalog: true}, "ok", time.Millisecond)
	}
	m.observe(&plugins.Plugin{Name: "cat_0", Catalog: true}, "ok", time.Millisecond)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		series := map[string]float64{}
		for _, s := range f.GetMetric() {
			v := s.GetCounter().GetValue()
			if h := s.GetHistogram(); h != nil {
				v = float64(h.GetSampleCount())
			}
			for _, l := range s.GetLabel() {
				if l.GetName() == "plugin" {
					series[l.GetValue()] = v
				}
			}
		}
		if len(series) != MaxPluginLabels+2 || series[LabelInline] != 20_000 || series[LabelOther] != 5 || series["cat_0"] != 2 {
			t.Errorf("%s: %d series, inline %v, other %v, cat_0 %v", f.GetName(), len(series), series[LabelInline], series[LabelOther], series["cat_0"])
		}
	}
}

// Issue 13, point 6: the executor admits at most MaxCalls direct calls per
// user; the calls of a run are admitted with their run.
func TestUserLimiterInExecutor(t *testing.T) {
	up := newUpstream(t, nil)
	p := mustPlugin(t, `{"name":"t","description":"d","parameters":{"type":"object"},
	  "execution":{"method":"GET","base_url":"%s/x"}}`, up.URL)
	h := newHarness(t)
	h.Limiter = &UserLimiter{MaxCalls: 1}
	hold, err := h.Limiter.AcquireCall(7) // a call of user 7 in flight
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.Execute(context.Background(), Call{Plugin: p, UserID: 7})
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Code != CodeRateLimited || !strings.Contains(res.Error.Message, "1 calls in flight") {
		t.Fatalf("user 7 over the limit: %v %s", err, resultJSON(t, res))
	}
	if res, err := h.Execute(context.Background(), Call{Plugin: p, UserID: 8}); err != nil || !res.OK {
		t.Fatalf("user 8: %v %s", err, resultJSON(t, res))
	}
	if res, err := h.Execute(context.Background(), Call{Plugin: p, UserID: 7, RunID: "r"}); err != nil || !res.OK {
		t.Fatalf("a run's call: %v %s", err, resultJSON(t, res))
	}
	hold()
	hold() // releasing twice gives back one slot only
	again, err := h.Limiter.AcquireCall(7)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Limiter.AcquireCall(7); err == nil {
		t.Fatal("a second slot after a double release")
	}
	again()
	if res, err := h.Execute(context.Background(), Call{Plugin: p, UserID: 7}); err != nil || !res.OK {
		t.Fatalf("user 7 after release: %v %s", err, resultJSON(t, res))
	}
	if n := len(h.Limiter.calls); n != 0 {
		t.Errorf("%d users still counted", n)
	}
	if recs := h.flush(t); recs[0].Status != StatusRefused || recs[0].ErrorClass != CodeRateLimited {
		t.Errorf("the refusal's record: %+v", recs[0])
	}
}
