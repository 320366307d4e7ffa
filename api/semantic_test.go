package api_test

import (
	"context"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

// embeddingsServer is a deterministic OpenAI-compatible embeddings endpoint
// on loopback: a text's vector counts its words, synonyms on one axis
// ("automobile" and "car"; "lease" and "hire"), other words hashed onto
// the rest. It keeps the texts it embedded.
func embeddingsServer(t *testing.T) (*httptest.Server, *embedded) {
	synonyms := map[string]int{"car": 0, "cars": 0, "automobile": 0, "vehicle": 0, "hire": 1, "lease": 1, "rent": 1}
	texts := &embedded{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "test-embed" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		texts.mu.Lock()
		texts.texts = append(texts.texts, req.Input...)
		texts.mu.Unlock()
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var data []item
		for i, in := range req.Input {
			v := make([]float32, 32)
			for _, word := range strings.Fields(strings.ToLower(in)) {
				if axis, ok := synonyms[word]; ok {
					v[axis]++
					continue
				}
				h := fnv.New32a()
				h.Write([]byte(word))
				v[2+h.Sum32()%30] += 0.1
			}
			data = append(data, item{i, v})
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	t.Cleanup(up.Close)
	return up, texts
}

type embedded struct {
	mu    sync.Mutex
	texts []string
}

// times is how often a text containing s was embedded.
func (e *embedded) times(s string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, t := range e.texts {
		if strings.Contains(t, s) {
			n++
		}
	}
	return n
}

// TestSemanticSearch: with an embeddings endpoint configured, plugin
// vectors are computed in the background once per content and stored, and
// a request that shares no word with a tool finds it through the fused
// ranking.
func TestSemanticSearch(t *testing.T) {
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		ctx := context.Background()
		emb, embedded := embeddingsServer(t)
		sem := &toolsearch.Semantic{Store: st, Model: "test-embed",
			Embedder: &toolsearch.OpenAIEmbedder{BaseURL: emb.URL + "/v1", Model: "test-embed", HTTP: egresstest.Client(t)}}
		changes := store.NewWatcher(st, time.Hour, nil)
		e := newEnv(t, st, func(s *api.Server) { s.Changes, s.Semantic = changes, sem })
		changes.Poll(ctx)
		for _, doc := range []string{
			tool("car_hire", "Hire a car", "Books a vehicle at a station.", ""),
			tool("issues_create", "Create an issue", "Opens a new issue.", ""),
		} {
			if code, out := e.do("POST", "/v1/plugins", adminToken, doc); code != http.StatusCreated {
				t.Fatalf("create: %d %v", code, out)
			}
		}
		search := func(q string) []any {
			code, out := e.do("GET", "/v1/tools/search?q="+strings.ReplaceAll(q, " ", "+"), adminToken, nil)
			if code != http.StatusOK {
				t.Fatalf("search: %d %v", code, out)
			}
			rs, _ := out["results"].([]any)
			return rs
		}
		search("issue") // loads the catalog: the vectors are computed in the background
		// Each write moved the catalog, so the vectors may be computed
		// twice (one plugin, then two): wait for both.
		waitFor(t, func() bool {
			var n int
			st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_plugin_embedding WHERE model = 'test-embed'").Scan(&n)
			return sem.Ready() && n == 2
		})
		rs := search("lease an automobile")
		if len(rs) == 0 || rs[0].(map[string]any)["name"] != "car_hire" {
			t.Fatalf("lease an automobile: %v, want car_hire first (no word in common: semantic)", rs)
		}
		var rows int
		if err := st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_plugin_embedding WHERE model = 'test-embed'").Scan(&rows); err != nil || rows != 2 {
			t.Fatalf("stored vectors: %d (%v), want 2", rows, err)
		}

		// A new plugin: only its vector is computed; the others come from
		// the database.
		if code, out := e.do("POST", "/v1/plugins", adminToken, tool("weather_now", "Current weather", "The weather now.", "")); code != http.StatusCreated {
			t.Fatalf("create: %d %v", code, out)
		}
		changes.Poll(ctx)
		search("weather")
		waitFor(t, func() bool {
			var n int
			st.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM sys_ai_plugin_embedding").Scan(&n)
			return n == 3
		})
		for _, title := range []string{"Hire a car", "Create an issue", "Current weather"} {
			if n := embedded.times(title); n != 1 {
				t.Errorf("%q embedded %d times, want once", title, n)
			}
		}
		if embedded.times("lease an automobile") != 1 {
			t.Error("the request was not embedded")
		}
	})
}

// waitFor polls cond (background work on loopback: milliseconds).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5 s")
}
