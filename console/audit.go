package console

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/blindexec/blindexec/store"
)

// auditedRoutes are the path prefixes of the administrative changes, with
// the kind each is recorded as; the longest prefix first.
var auditedRoutes = []struct{ prefix, kind string }{
	{"/v1/plugins/import/", "import"},
	{"/v1/plugins", "plugin"},
	{"/v1/credentials", "credential"},
	{"/v1/tokens", "token"},
	{"/v1/mcp/servers", "mcp_server"},
}

func auditKind(r *http.Request) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return ""
	}
	for _, a := range auditedRoutes {
		if strings.HasPrefix(r.URL.Path, a.prefix) {
			return a.kind
		}
	}
	return ""
}

// audited records each successful change made through next, from the
// console or with a bearer token: who (the token's role and user), what
// (method and path: names and keys, never values) and when. An import's
// dry run changes nothing and is not recorded.
func (c *Console) audited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kind := auditKind(r)
		if kind == "" {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w, status: http.StatusOK, keep: kind == "import"}
		next.ServeHTTP(rec, r)
		if rec.status/100 != 2 || rec.dryRun() {
			return
		}
		who, err := c.api.WhoIs(r)
		if err != nil {
			return // not authenticated: the route refused it
		}
		via := "api"
		if r.Header.Get("Authorization") == "" {
			via = "console"
		}
		c.record(r.Context(), &store.AdminEvent{Actor: actorOf(who), Via: via, Action: r.Method, Kind: kind,
			Target: r.URL.Path, HTTPStatus: rec.status})
	})
}

// recorder keeps an answer's status and, for imports, its start (where
// dry_run is).
type recorder struct {
	http.ResponseWriter
	status      int
	wroteHeader bool
	keep        bool
	body        bytes.Buffer
}

// keepMax bounds the answer kept to find out whether it was a dry run.
const keepMax = 1 << 20

func (r *recorder) WriteHeader(code int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	r.wroteHeader = true
	if r.keep && r.body.Len() < keepMax {
		r.body.Write(p[:min(len(p), keepMax-r.body.Len())])
	}
	return r.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (the API's
// deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func (r *recorder) dryRun() bool {
	var v struct {
		DryRun bool `json:"dry_run"`
	}
	return r.keep && json.Unmarshal(r.body.Bytes(), &v) == nil && v.DryRun
}
