package api

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

// FuzzQueryParams: whatever query string a caller sends, the routes'
// readers of it (GET /v1/plugins, the tool searches, an inbox's page, an
// upload's options) never panic; what they take is within its bounds, and
// what they refuse is a 400 whose message starts with the parameter's
// name (the clear-error rule: which field, what was expected).
func FuzzQueryParams(f *testing.F) {
	for _, s := range []string{
		"", "limit=5&offset=10", "limit=0", "limit=501", "limit=-1", "offset=-3", "offset=9223372036854775808",
		"status=0&type=mcp&source=none&consequential=true&q=%20x%20", "source=0", "source=abc", "consequential=maybe",
		"q=" + strings.Repeat("y", 600), "limit=1e3", "limit=%2B7", "cursor=abc&limit=100",
		"dry_run=1&strict=TRUE&tag=a&tag=b&method=get", "methods=get", "nope=1", "force=yes",
	} {
		f.Add(s)
	}
	s := &Server{MaxQueryChars: 100}
	f.Fuzz(func(t *testing.T, raw string) {
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/v1/plugins", RawQuery: raw}}
		q := r.URL.Query()
		named := func(err error, names ...string) {
			t.Helper()
			var pe *paramError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: %T %v, not a malformed parameter (400)", raw, err, err)
			}
			if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(pe.msg, n+": ") }) {
				t.Fatalf("%q: %q names none of %v", raw, pe.msg, names)
			}
		}

		if flt, _, _, err := pluginQuery(r); err != nil {
			named(err, "consequential", "status", "type", "source", "limit", "offset")
		} else if flt.Limit < 0 || flt.Limit > maxPluginPage || flt.Offset < 0 ||
			!slices.Contains([]string{"", store.StatusEnabled, store.StatusDisabled}, flt.Status) ||
			!slices.Contains([]string{"", plugins.TypeHTTP, plugins.TypeMCP}, flt.Type) ||
			flt.SourceID != nil && (*flt.SourceID < 1 || flt.NoSource) {
			t.Fatalf("%q: GET /v1/plugins took %+v", raw, flt)
		}

		if query, limit, err := s.searchParams(r); err != nil {
			var long *toolsearch.QueryTooLongError
			if !errors.As(err, &long) {
				named(err, "limit")
			}
		} else if limit < 1 || limit > toolsearch.MaxLimit || toolsearch.CheckQuery(query, s.MaxQueryChars) != nil {
			t.Fatalf("%q: a search took q %q, limit %d", raw, query, limit)
		}

		w := httptest.NewRecorder()
		if limit, cursor, ok := pageParams(w, r); !ok {
			if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), `"message":"limit: `) {
				t.Fatalf("%q: an inbox's page refused with %d %s", raw, w.Code, w.Body)
			}
		} else if limit < 0 || limit > store.MaxPage || cursor != q.Get("cursor") {
			t.Fatalf("%q: an inbox's page took limit %d, cursor %q", raw, limit, cursor)
		}

		if _, err := uploadOptions(q); err != nil {
			var names []string
			for name := range q {
				names = append(names, name)
			}
			var pe *paramError
			if errors.As(err, &pe) {
				named(err, names...)
			} else if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(err.Error(), n+": ") }) {
				t.Fatalf("%q: an upload refused with %q, naming none of %v", raw, err, names)
			}
		}
	})
}
