// Package openapiquery answers questions about an OpenAPI document for
// developers' agents: the tools of seed 000 (search_operations,
// get_request_schema, get_response_schema and build_call_plan, which turns
// the chosen operation and the agent's values into the call plan of its §5)
// and the six tools of seed 003 (get_api_info, list_endpoints,
// search_endpoints, get_endpoint_details, list_schemas,
// get_schema_details), served over MCP by [NewServer] and usable directly
// from the command line through [Cache] and [Index].
//
// A document comes from a [Location]: {baseUrl}/openapi.json, any URL or a
// file. Every [Cache.Get] fetches it again and hashes it (sha256) while it
// streams in; an unchanged hash reuses the index already built, a changed
// one builds a new index, and an optional TTL skips fetching altogether.
package openapiquery

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins/openapi"
)

// Location turns the CLI's choice of document into a location for
// [Cache.Get]: {baseURL}/openapi.json (seed 000 §4.1.1) when baseURL is set,
// else spec, a URL or a file path.
func Location(baseURL, spec string) (string, error) {
	switch {
	case baseURL != "" && spec != "":
		return "", errors.New("give either a base URL or a spec, not both")
	case baseURL != "":
		if !openapi.IsURL(baseURL) {
			return "", fmt.Errorf("base URL %q: want http:// or https://", redact.URL(baseURL))
		}
		return strings.TrimRight(baseURL, "/") + "/openapi.json", nil
	case spec != "":
		return spec, nil
	}
	return "", errors.New("give a base URL or a spec")
}

// SourceError is a document that could not be fetched or parsed. No cached
// index is ever returned in its place.
type SourceError struct {
	Source string
	// Parse is set when the bytes arrived but are not an OpenAPI document.
	Parse bool
	// Status is the HTTP status of a fetch answered with anything but 200.
	Status int
	Err    error
}

// Error names the source redacted (redact.Location: no
// userinfo, no query credential; review79).
func (e *SourceError) Error() string {
	if e.Parse {
		return fmt.Sprintf("openapiquery: %s: %v", e.Shown(), e.Err)
	}
	return fmt.Sprintf("openapiquery: fetch %s: %s", e.Shown(), e.Reason())
}

// Shown is the source as every message names it, the tools' answers and
// the log included: without userinfo or a query's credential
// (redact.Location; review80: the answers quoted it whole).
func (e *SourceError) Shown() string { return redact.Location(e.Source) }

// Reason is why, as a message beside Shown says it: no URL quoted again
// (openapi.FetchCause), no file's path, which is the source.
func (e *SourceError) Reason() string {
	if e.Err == nil {
		return ""
	}
	err := openapi.FetchCause(e.Source, e.Err)
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	}
	return err.Error()
}

func (e *SourceError) Unwrap() error { return e.Err }

// FetchInfo describes how [Cache.Get] obtained an index.
type FetchInfo struct {
	Source string `json:"source"`
	SHA256 string `json:"sha256"`
	// Bytes is the size of the document fetched; 0 when the TTL skipped
	// the fetch.
	Bytes     int64     `json:"bytes"`
	FetchedAt time.Time `json:"fetchedAt"`
	// Reused reports that the index built for this hash earlier was used
	// instead of parsing the document again.
	Reused bool `json:"reused"`
	// Cached reports that the fetch was skipped: the last one is younger
	// than the cache TTL.
	Cached bool `json:"cached"`
}

// maxLocations bounds the locations a cache remembers (spec_path comes
// from clients); the least recently used one is forgotten first.
const maxLocations = 32

// Cache fetches documents and keeps one index per document hash. It is
// safe for concurrent use: MCP sessions share one.
type Cache struct {
	client *http.Client
	ttl    time.Duration
	now    func() time.Time

	mu     sync.Mutex
	locs   map[string]*located
	byHash map[string]*build
	clock  uint64 // orders uses, for eviction

	builds atomic.Int64 // indexes built (parses), for tests
}

// located is what a cache knows of one location.
type located struct {
	hash      string
	bytes     int64
	fetchedAt time.Time
	used      uint64
}

// build is the index of one hash; done closes when idx or err is set.
type build struct {
	done chan struct{}
	idx  *Index
	err  error
	refs int // locations whose current hash this is
}

// NewCache returns a cache that fetches URLs with client, which should be
// the egress-guarded one (egress.NewClient). ttl > 0 skips fetching a
// location again within ttl of its last successful fetch (the optional
// cache_ttl_seconds of seed 000 §4.1.1); 0 fetches on every Get.
func NewCache(client *http.Client, ttl time.Duration) *Cache {
	return &Cache{
		client: client,
		ttl:    ttl,
		now:    time.Now,
		locs:   make(map[string]*located),
		byHash: make(map[string]*build),
	}
}

// Get returns the index of the document at location (see [Location]),
// fetching it first unless the TTL says otherwise. A failed fetch or parse
// is a *[SourceError].
func (c *Cache) Get(ctx context.Context, location string) (*Index, FetchInfo, error) {
	info := FetchInfo{Source: location}
	c.mu.Lock()
	if l := c.locs[location]; l != nil && c.ttl > 0 && c.now().Sub(l.fetchedAt) < c.ttl {
		c.clock++
		l.used = c.clock
		info.SHA256, info.FetchedAt, info.Reused, info.Cached = l.hash, l.fetchedAt, true, true
		idx := c.byHash[l.hash].idx
		c.mu.Unlock()
		return idx, info, nil
	}
	c.mu.Unlock()

	data, sum, err := c.fetch(ctx, location)
	if err != nil {
		return nil, info, err
	}
	info.SHA256, info.Bytes, info.FetchedAt = sum, int64(len(data)), c.now()

	c.mu.Lock()
	b := c.byHash[sum]
	builder := b == nil
	if builder {
		b = &build{done: make(chan struct{})}
		c.byHash[sum] = b
	}
	c.mu.Unlock()

	if builder {
		b.idx, b.err = c.buildIndex(data, location)
		close(b.done)
	} else {
		select {
		case <-b.done:
		case <-ctx.Done():
			return nil, info, ctx.Err()
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if b.err != nil {
		if builder {
			delete(c.byHash, sum)
		}
		return nil, info, b.err
	}
	c.point(location, sum, info)
	info.Reused = !builder
	return b.idx, info, nil
}

func (c *Cache) buildIndex(data []byte, location string) (*Index, error) {
	c.builds.Add(1)
	doc, err := openapi.Load(data, location)
	if err != nil {
		return nil, &SourceError{Source: location, Parse: true, Err: err}
	}
	return NewIndex(doc), nil
}

// point records that location now has the document hash; c.mu is held.
func (c *Cache) point(location, hash string, info FetchInfo) {
	c.clock++
	l := c.locs[location]
	if l == nil {
		if len(c.locs) >= maxLocations {
			c.evict()
		}
		l = &located{}
		c.locs[location] = l
	}
	if l.hash != hash {
		c.release(l.hash)
		c.byHash[hash].refs++
		l.hash = hash
	}
	l.bytes, l.fetchedAt, l.used = info.Bytes, info.FetchedAt, c.clock
}

// evict forgets the least recently used location; c.mu is held.
func (c *Cache) evict() {
	var oldest string
	var min uint64
	for loc, l := range c.locs {
		if oldest == "" || l.used < min {
			oldest, min = loc, l.used
		}
	}
	c.release(c.locs[oldest].hash)
	delete(c.locs, oldest)
}

// release drops a location's hold on the index of hash; c.mu is held.
func (c *Cache) release(hash string) {
	if b := c.byHash[hash]; b != nil {
		if b.refs--; b.refs <= 0 {
			delete(c.byHash, hash)
		}
	}
}

// fetch reads the document at location, hashing it as it streams in.
func (c *Cache) fetch(ctx context.Context, location string) ([]byte, string, error) {
	fail := func(status int, err error) ([]byte, string, error) {
		return nil, "", &SourceError{Source: location, Status: status, Err: err}
	}
	var body io.Reader
	if openapi.IsURL(location) {
		if c.client == nil {
			return fail(0, errors.New("no HTTP client configured"))
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, location, nil)
		if err != nil {
			return fail(0, err)
		}
		req.Header.Set("Accept", "application/json, application/yaml;q=0.9, */*;q=0.5")
		resp, err := c.client.Do(req)
		if err != nil {
			return fail(0, err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fail(resp.StatusCode, fmt.Errorf("HTTP %s", resp.Status))
		}
		body = resp.Body
	} else {
		f, err := os.Open(location)
		if err != nil {
			return fail(0, err)
		}
		defer f.Close()
		body = f
	}
	h := sha256.New()
	data, err := io.ReadAll(io.TeeReader(io.LimitReader(body, openapi.MaxDocumentBytes+1), h))
	if err != nil {
		return fail(0, err)
	}
	if len(data) > openapi.MaxDocumentBytes {
		return fail(0, fmt.Errorf("larger than %d bytes", openapi.MaxDocumentBytes))
	}
	return data, hex.EncodeToString(h.Sum(nil)), nil
}
