package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/jsonlimit"
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
