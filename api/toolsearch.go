package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

// toolIndex is the search index of the enabled catalog. It follows the
// catalog: each reload (the change counter moved) rebuilds it in the
// background, and a search that finds it behind the catalog builds it
// first. A search of a fresh index reads nothing from the database.
type toolIndex struct {
	live       toolsearch.Live
	latest     atomic.Pointer[catalogState] // the catalog's last reload
	semVersion atomic.Int64                 // 1 + the catalog version whose vectors are computed or being computed; 0: none
	expVersion atomic.Int64                 // the same for the model's written requests
}

type catalogState struct {
	enabled []*plugins.Plugin
	version int64
}

// followCatalog hooks the index to the catalog's reloads, and has the
// catalog reload as soon as the plugins' counter moves, so that the index
// is rebuilt before the next search rather than by it. Handler calls it
// once the catalog is set.
func (s *Server) followCatalog() {
	s.tools.live.Expansion = s.Expansion
	if s.Changes != nil {
		s.Changes.OnChange(func(old, new store.Versions) {
			if new.Plugins != old.Plugins {
				go func() {
					if _, err := s.Catalog.EnabledPlugins(context.Background()); err != nil {
						s.Logger.Warn("catalog not reloaded for tool search", "err", err)
					}
				}()
			}
		})
	}
	s.Catalog.OnReload(func(enabled []*plugins.Plugin, version int64) {
		st := &catalogState{enabled, version}
		s.tools.latest.Store(st)
		go func() {
			// Off the request that reloaded the catalog: it must not wait
			// for the build.
			if _, err := s.tools.live.At(context.Background(), st.version, st.enabled); err != nil {
				s.Logger.Warn("tool search index not rebuilt", "version", st.version, "err", err)
			}
		}()
		s.updateVectors(st)
		s.updateExpansion(st)
	})
}

// updateExpansion has the model write the requests of the tools of a
// catalog version that have none, in the background, once per version,
// then rebuilds the index with them. A model that fails leaves search as
// it was; the next catalog change tries again.
func (s *Server) updateExpansion(st *catalogState) {
	old, want := s.tools.expVersion.Load(), st.version+1
	if s.Expansion == nil || old == want || !s.tools.expVersion.CompareAndSwap(old, want) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		asked, err := s.Expansion.Update(ctx, st.enabled)
		if err != nil {
			s.Logger.Warn("tool search: the model's requests not all written", "version", st.version, "asked", asked, "err", err)
		}
		if cur := s.tools.latest.Load(); cur != nil {
			if err := s.tools.live.Rebuild(ctx, cur.enabled); err != nil {
				s.Logger.Warn("tool search index not rebuilt", "version", cur.version, "err", err)
			}
		}
	}()
}

// updateVectors computes the vectors of a catalog version in the
// background, once per version, when semantic ranking is on.
func (s *Server) updateVectors(st *catalogState) {
	old, want := s.tools.semVersion.Load(), st.version+1
	if s.Semantic == nil || old == want || !s.tools.semVersion.CompareAndSwap(old, want) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if err := s.Semantic.Update(ctx, st.enabled); err != nil {
			s.Logger.Warn("tool vectors not updated; keyword search only", "version", st.version, "err", err)
			s.tools.semVersion.CompareAndSwap(want, 0) // the next search tries again
		}
	}()
}

// ToolIndex returns the search index of the current catalog (the LLM loop
// and the MCP server search it too).
func (s *Server) ToolIndex(ctx context.Context) (*toolsearch.Index, error) {
	if s.Catalog == nil {
		return nil, errors.New("tool search: the server has no catalog")
	}
	enabled, err := s.Catalog.EnabledPlugins(ctx) // reloads, and so notifies, when the counter moved
	if err != nil {
		return nil, err
	}
	st := s.tools.latest.Load()
	if st == nil || st.version != s.Catalog.Version() {
		// The catalog was loaded before the hook, or by a caller racing
		// this one: take what it holds now.
		st = &catalogState{enabled, s.Catalog.Version()}
	}
	s.updateVectors(st)
	s.updateExpansion(st)
	return s.tools.live.At(ctx, st.version, st.enabled)
}

// semanticTimeout bounds the embedding of a request; past it, keyword
// results answer alone.
const semanticTimeout = 3 * time.Second

// SearchTools searches the current catalog and counts the search in the
// metrics (empty searches apart). With semantic ranking on and the vectors
// computed, the keyword and semantic rankings are fused (reciprocal rank
// fusion).
func (s *Server) SearchTools(ctx context.Context, query string, limit int) ([]toolsearch.Result, error) {
	rs, _, err := s.searchPage(ctx, query, 0, limit, nil)
	return rs, err
}

// searchPage returns the results offset to offset+limit (every one from
// offset when limit is 0) of the search for query among the tools usable
// keeps (nil: every one), and the number of those results in all. The
// ranking is the keyword ranking; with semantic ranking on and the
// vectors computed, the fusion of the two rankings' first
// toolsearch.MaxLimit each, followed by the keyword ranking's other
// matches, so that every page is a slice of one ranking. The index
// filters while it ranks (toolsearch.Index.RankUsable): a page is full
// of usable tools and nothing past it is ranked. A first page counts in
// the metrics.
func (s *Server) searchPage(ctx context.Context, query string, offset, limit int, usable *toolsearch.Filter) ([]toolsearch.Result, int, error) {
	ix, err := s.ToolIndex(ctx)
	if err != nil {
		return nil, 0, err
	}
	depth := 0 // every match
	if limit > 0 {
		depth = offset + limit
	}
	rs, total, err := ix.RankUsable(query, depth, usable)
	if err != nil {
		return nil, 0, err
	}
	if s.Semantic != nil && s.Semantic.Ready() {
		sctx, cancel := context.WithTimeout(ctx, semanticTimeout)
		sem, err := s.Semantic.Search(sctx, query, toolsearch.MaxLimit)
		cancel()
		if err != nil {
			s.Logger.WarnContext(ctx, "semantic search failed; keyword results alone", "err", err)
		} else if rs, total, err = fused(ix, query, depth, sem, usable); err != nil {
			return nil, 0, err
		}
	}
	if offset == 0 {
		s.tools.live.Metrics.Observe(len(rs))
	}
	return rs[min(offset, len(rs)):], total, nil
}

// fused ranks the fusion of the keyword and semantic rankings' first
// toolsearch.MaxLimit, then the keyword ranking's other matches: its
// first depth (every one when depth is 0), and how many in all; of the
// tools usable keeps (nil: every one).
func fused(ix *toolsearch.Index, query string, depth int, sem []toolsearch.Result, usable *toolsearch.Filter) ([]toolsearch.Result, int, error) {
	kw, _, err := ix.RankUsable(query, 0, usable)
	if err != nil {
		return nil, 0, err
	}
	if sem, err = usable.Results(sem); err != nil {
		return nil, 0, err
	}
	top := toolsearch.Fuse(2*toolsearch.MaxLimit, kw[:min(len(kw), toolsearch.MaxLimit)], sem)
	in := make(map[string]bool, len(top))
	for _, r := range top {
		in[r.Name] = true
	}
	for _, r := range kw {
		if !in[r.Name] {
			top = append(top, r)
		}
	}
	if depth > 0 && depth < len(top) {
		return top[:depth], len(top), nil
	}
	return top, len(top), nil
}

// searchResult is one result of GET /v1/tools/search.
type searchResult struct {
	Name  string       `json:"name"`
	Title string       `json:"title,omitempty"`
	Score float64      `json:"score"`
	Tool  plugins.Tool `json:"tool"`
}

// SearchResponse is the answer of GET /v1/tools/search (and of
// `blindexec search --json`): a page of the results and how many there are.
type SearchResponse struct {
	Results []searchResult `json:"results"`
	Total   int            `json:"total"`
	Offset  int            `json:"offset"`
	TookMS  float64        `json:"took_ms"`
}

// NewSearchResponse shapes a page of results, of total from offset on, as
// the API answers them.
func NewSearchResponse(rs []toolsearch.Result, total, offset int, took time.Duration) SearchResponse {
	out := SearchResponse{Results: make([]searchResult, 0, len(rs)), Total: total, Offset: offset,
		TookMS: float64(took.Microseconds()) / 1000}
	for _, r := range rs {
		out.Results = append(out.Results, searchResult{Name: r.Name, Title: r.Title, Score: r.Score, Tool: r.Plugin.Tool(nil)})
	}
	return out
}

// searchTools answers GET /v1/tools/search?q=&limit=&offset=.
func (s *Server) searchTools(w http.ResponseWriter, r *http.Request) {
	q, limit, err := s.searchParams(r)
	if err == nil && q == "" {
		err = &paramError{"q: give the request to search for, e.g. ?q=list+open+issues"}
	}
	var offset int
	if err == nil {
		offset, err = offsetParam(r)
	}
	if err != nil {
		s.toolsError(w, r, err)
		return
	}
	start := time.Now()
	rs, total, err := s.searchPage(r.Context(), q, offset, limit, s.usableFilter(r))
	if err != nil {
		s.toolsError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, NewSearchResponse(rs, total, offset, time.Since(start)))
}

// usableFilter narrows a request's search to its user's tools (or the
// agent's its ?agent= names), nil when its lists are not narrowed: the
// access rule is asked once per search, for a user the set of the
// index's tools it may use, kept per user until the catalog or the
// user's strings change (access.Checker.UsableSet).
func (s *Server) usableFilter(r *http.Request) *toolsearch.Filter {
	if !s.filtersTools(r) {
		return nil
	}
	ctx, agent := r.Context(), agentParam(r)
	return s.filterFor(ctx, agent)
}

// filterFor narrows a search to what the context's caller may use
// within agent (s.usable's rule).
func (s *Server) filterFor(ctx context.Context, agent string) *toolsearch.Filter {
	f := &toolsearch.Filter{Keep: func(ps []*plugins.Plugin) ([]*plugins.Plugin, error) { return s.usable(ctx, agent, ps) }}
	if p := principalFrom(ctx); s.Access != nil && p.role < roleService {
		sub := s.subject(ctx, p.userID, agent)
		f.Set = func(all []*plugins.Plugin) (toolsearch.Set, error) { return s.Access.UsableSet(ctx, sub, all) }
	}
	return f
}

// offsetParam reads ?offset=, 0 when absent.
func offsetParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("offset")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, &paramError{fmt.Sprintf("offset: %q is not a whole number (0 or more)", v)}
	}
	return n, nil
}

// searchParams reads q (at most MaxQueryChars characters) and limit
// (default toolsearch.DefaultLimit, at most toolsearch.MaxLimit).
func (s *Server) searchParams(r *http.Request) (string, int, error) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	if err := toolsearch.CheckQuery(q, s.MaxQueryChars); err != nil {
		return "", 0, err
	}
	limit := toolsearch.DefaultLimit
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return "", 0, &paramError{fmt.Sprintf("limit: %q is not a positive integer", v)}
		}
		limit = min(n, toolsearch.MaxLimit)
	}
	return q, limit, nil
}

// rankedTools are the enabled tools matching q, best first, within the
// names of ?names= when given.
func (s *Server) rankedTools(r *http.Request, q string, limit int) ([]*plugins.Plugin, error) {
	names := r.URL.Query().Get("names")
	n := limit
	if names != "" {
		n = toolsearch.MaxLimit // filtered below
	}
	rs, _, err := s.searchPage(r.Context(), q, 0, n, s.usableFilter(r))
	if err != nil {
		return nil, err
	}
	var allowed map[string]bool
	if names != "" {
		allowed = map[string]bool{}
		for _, name := range strings.Split(names, ",") {
			allowed[name] = true
		}
	}
	out := make([]*plugins.Plugin, 0, len(rs))
	for _, res := range rs {
		if (allowed == nil || allowed[res.Name]) && len(out) < limit {
			out = append(out, res.Plugin)
		}
	}
	return out, nil
}

// codeQueryTooLong refuses a search query over MaxQueryChars: 400.
const codeQueryTooLong = "query_too_long"

// boolParam reads the boolean query parameter name as the description's
// boolean reads (strconv.ParseBool: 1, t, TRUE…); absent or empty, false.
// A route comparing with "true" alone read ?dry_run=1 as false.
func boolParam(r *http.Request, name string) (bool, error) {
	if r.URL.RawQuery == "" {
		return false, nil
	}
	return queryBool(r.URL.Query(), name)
}

// queryBool is boolParam over parsed values.
func queryBool(q url.Values, name string) (bool, error) {
	v := q.Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, &paramError{fmt.Sprintf(`%s: %q is neither "true" nor "false"`, name, v)}
	}
	return b, nil
}

// paramError is a malformed query parameter: 400.
type paramError struct{ msg string }

func (e *paramError) Error() string { return e.msg }

// toolsError answers err: 400 for a malformed parameter, else 500.
func (s *Server) toolsError(w http.ResponseWriter, r *http.Request, err error) {
	var pe *paramError
	if errors.As(err, &pe) {
		writeError(w, http.StatusBadRequest, "malformed_request", pe.msg, nil)
		return
	}
	if unavailable(w, err) || refusedAgent(w, err) {
		return
	}
	if qe, ok := errors.AsType[*toolsearch.QueryTooLongError](err); ok {
		writeError(w, http.StatusBadRequest, codeQueryTooLong, "q: "+strings.TrimPrefix(qe.Error(), "query: "),
			map[string]any{"limit": "query characters", "max": qe.Max})
		return
	}
	s.internal(w, r, err)
}
