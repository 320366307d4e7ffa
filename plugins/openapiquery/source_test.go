package openapiquery

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/egress/egresstest"
)

// docServer serves the document in *doc at /openapi.json, or fails with
// status when it is set, counting requests.
type docServer struct {
	mu       sync.Mutex
	doc      []byte
	status   int
	requests atomic.Int64
}

func (d *docServer) set(doc []byte, status int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.doc, d.status = doc, status
}

func (d *docServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.requests.Add(1)
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.URL.Path != "/openapi.json" {
		http.NotFound(w, r)
		return
	}
	if d.status != 0 {
		http.Error(w, "down", d.status)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(d.doc)
}

func newDocServer(t *testing.T, path string) (*docServer, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := &docServer{doc: b}
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	loc, err := Location(srv.URL+"/", "")
	if err != nil {
		t.Fatal(err)
	}
	return d, loc
}

func TestCacheReusesIndexByHash(t *testing.T) {
	d, loc := newDocServer(t, "testdata/fastapi.json")
	c := NewCache(egresstest.Client(t), 0)
	ctx := context.Background()

	x1, info, err := c.Get(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if info.Reused || info.SHA256 == "" || info.Bytes == 0 {
		t.Errorf("first fetch: %+v", info)
	}
	x2, info2, err := c.Get(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if x2 != x1 || !info2.Reused || info2.SHA256 != info.SHA256 || c.builds.Load() != 1 {
		t.Errorf("same hash: reused %v, builds %d; want the same index, parsed once", info2.Reused, c.builds.Load())
	}
	if n := d.requests.Load(); n != 2 {
		t.Errorf("%d requests, want a fetch per Get without a TTL", n)
	}

	// A changed document is parsed again.
	cycles, _ := os.ReadFile("testdata/cycles.yaml")
	d.set(cycles, 0)
	x3, info3, err := c.Get(ctx, loc)
	if err != nil {
		t.Fatal(err)
	}
	if x3 == x1 || info3.Reused || info3.SHA256 == info.SHA256 || c.builds.Load() != 2 {
		t.Errorf("changed hash: reused %v, builds %d", info3.Reused, c.builds.Load())
	}
	if x3.Doc.Title != "Cycles and edge cases" {
		t.Errorf("title %q", x3.Doc.Title)
	}
	if len(c.byHash) != 1 {
		t.Errorf("%d indexes kept, want only the current one", len(c.byHash))
	}

	// A failed fetch is an error, never the last index.
	d.set(nil, http.StatusBadGateway)
	x4, _, err := c.Get(ctx, loc)
	var se *SourceError
	if !errors.As(err, &se) || se.Status != http.StatusBadGateway || x4 != nil {
		t.Fatalf("failed fetch: %v, %v", x4, err)
	}
	if e := ErrorObject(err); e.Code != CodeFetchFailed || e.Details["status"] != http.StatusBadGateway {
		t.Errorf("error object %+v", e)
	}

	// Not OpenAPI: a parse error.
	d.set([]byte(`{"hello": "world"}`), 0)
	_, _, err = c.Get(ctx, loc)
	if !errors.As(err, &se) || !se.Parse || ErrorObject(err).Code != CodeInvalidDocument {
		t.Errorf("not OpenAPI: %v", err)
	}
}

func TestCacheTTL(t *testing.T) {
	d, loc := newDocServer(t, "testdata/fastapi.json")
	c := NewCache(egresstest.Client(t), time.Minute)
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	ctx := context.Background()
	if _, _, err := c.Get(ctx, loc); err != nil {
		t.Fatal(err)
	}
	d.set(nil, http.StatusInternalServerError) // would fail if fetched
	now = now.Add(59 * time.Second)
	x, info, err := c.Get(ctx, loc)
	if err != nil || x == nil || !info.Cached || d.requests.Load() != 1 {
		t.Fatalf("within the TTL: %+v, %v, %d requests; want no fetch", info, err, d.requests.Load())
	}
	now = now.Add(2 * time.Second)
	if _, _, err := c.Get(ctx, loc); err == nil || d.requests.Load() != 2 {
		t.Fatalf("after the TTL: %v, %d requests; want a fetch, and its failure", err, d.requests.Load())
	}
}

func TestCacheConcurrent(t *testing.T) {
	d, loc := newDocServer(t, "testdata/fastapi.json")
	c := NewCache(egresstest.Client(t), 0)
	var wg sync.WaitGroup
	indexes := make([]*Index, 16)
	for i := range indexes {
		wg.Go(func() {
			x, _, err := c.Get(context.Background(), loc)
			if err != nil {
				t.Error(err)
			}
			indexes[i] = x
		})
	}
	wg.Wait()
	for _, x := range indexes {
		if x != indexes[0] {
			t.Fatal("concurrent Gets of one document returned different indexes")
		}
	}
	if n := c.builds.Load(); n != 1 {
		t.Errorf("%d builds for one hash, want 1", n)
	}
	if d.requests.Load() != 16 {
		t.Errorf("%d requests", d.requests.Load())
	}
}

func TestCacheEgressAndFiles(t *testing.T) {
	_, loc := newDocServer(t, "testdata/fastapi.json")
	// The default policy refuses loopback: the fetch must go through it.
	c := NewCache(egress.NewClient(egresstest.Dialer("")), 0)
	_, _, err := c.Get(context.Background(), loc)
	var denied *egress.DeniedError
	if !errors.As(err, &denied) {
		t.Errorf("loopback under the default policy: %v, want *egress.DeniedError", err)
	}

	x, _, err := c.Get(context.Background(), "testdata/cycles.yaml")
	if err != nil || x.Doc.Title != "Cycles and edge cases" {
		t.Fatalf("file: %v", err)
	}
	_, _, err = c.Get(context.Background(), "testdata/missing.json")
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestCacheEvicts(t *testing.T) {
	c := NewCache(nil, 0)
	ctx := context.Background()
	if _, _, err := c.Get(ctx, "testdata/fastapi.json"); err != nil {
		t.Fatal(err)
	}
	// The same file under many names: one index, held by each; the
	// least recently used location, fastapi.json, is forgotten, and its
	// index with it.
	for i := range maxLocations + 5 {
		if _, _, err := c.Get(ctx, "testdata"+strings.Repeat("/", i+1)+"cycles.yaml"); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.locs) != maxLocations || len(c.byHash) != 1 || c.builds.Load() != 2 {
		t.Errorf("%d locations, %d indexes, %d builds; want %d, 1, 2", len(c.locs), len(c.byHash), c.builds.Load(), maxLocations)
	}
}

func TestLocation(t *testing.T) {
	for _, tc := range []struct{ base, spec, want string }{
		{"http://localhost:8000", "", "http://localhost:8000/openapi.json"},
		{"https://api.example.com/v1/", "", "https://api.example.com/v1/openapi.json"},
		{"", "spec.yaml", "spec.yaml"},
		{"", "https://x/openapi.yaml", "https://x/openapi.yaml"},
	} {
		if got, err := Location(tc.base, tc.spec); err != nil || got != tc.want {
			t.Errorf("Location(%q, %q) = %q, %v; want %q", tc.base, tc.spec, got, err, tc.want)
		}
	}
	for _, bad := range [][2]string{{"", ""}, {"http://a", "b"}, {"localhost:8000", ""}} {
		if _, err := Location(bad[0], bad[1]); err == nil {
			t.Errorf("Location(%q, %q): no error", bad[0], bad[1])
		}
	}
}
