package toolsearch

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/blindexec/blindexec/plugins"
)

// Embedder turns texts into vectors.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// MaxEmbeddingsAnswer bounds what is read of an embeddings answer.
const MaxEmbeddingsAnswer = 64 << 20

// OpenAIEmbedder calls an OpenAI-compatible embeddings endpoint:
// POST {BaseURL}/embeddings {"model", "input": [...]}.
type OpenAIEmbedder struct {
	BaseURL string // e.g. https://api.openai.com/v1
	Model   string
	APIKey  string
	HTTP    *http.Client // the egress-guarded client
}

// Embed sends texts in one request and returns their vectors in order.
func (e *OpenAIEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(map[string]any{"model": e.Model, "input": texts})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(e.BaseURL, "/")+"/embeddings", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if e.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.APIKey)
	}
	resp, err := e.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxEmbeddingsAnswer))
	if err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("embeddings: status %d: %.200s", resp.StatusCode, raw)
	}
	var out struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("embeddings: %w", err)
	}
	if len(out.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings: %d vectors for %d texts", len(out.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	for _, d := range out.Data {
		if d.Index < 0 || d.Index >= len(texts) {
			return nil, fmt.Errorf("embeddings: index %d out of range", d.Index)
		}
		vecs[d.Index] = d.Embedding
	}
	return vecs, nil
}

// VectorStore keeps plugin vectors by model and content hash; *store.Store
// implements it.
type VectorStore interface {
	Vectors(ctx context.Context, model string) (map[string][]float32, error)
	SaveVectors(ctx context.Context, model string, vectors map[string][]float32) error
}

// Semantic ranks tools by the cosine of their vectors with the request's:
// words need not match. Plugin vectors are computed once per content (a
// hash of the text embedded) and stored, off the import path: Update runs
// after the catalog changes.
type Semantic struct {
	Embedder Embedder
	Store    VectorStore
	Model    string // the key of the stored vectors

	mu  sync.Mutex // serializes updates
	cur atomic.Pointer[vectorIndex]
}

type vectorIndex struct {
	docs []*plugins.Plugin
	vecs [][]float32 // unit length
}

// embedBatch bounds the texts of one embeddings request.
const embedBatch = 64

// Update makes the vectors of ps current: those stored are loaded, the
// others embedded and stored.
func (s *Semantic) Update(ctx context.Context, ps []*plugins.Plugin) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, err := s.Store.Vectors(ctx, s.Model)
	if err != nil {
		return err
	}
	hashes := make([]string, len(ps))
	var missing []int
	for i, p := range ps {
		hashes[i] = contentHash(embeddingText(p))
		if _, ok := stored[hashes[i]]; !ok {
			missing = append(missing, i)
		}
	}
	for start := 0; start < len(missing); start += embedBatch {
		batch := missing[start:min(start+embedBatch, len(missing))]
		texts := make([]string, len(batch))
		for j, i := range batch {
			texts[j] = embeddingText(ps[i])
		}
		vecs, err := s.Embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		fresh := map[string][]float32{}
		for j, i := range batch {
			fresh[hashes[i]] = vecs[j]
			stored[hashes[i]] = vecs[j]
		}
		if err := s.Store.SaveVectors(ctx, s.Model, fresh); err != nil {
			return err
		}
	}
	vi := &vectorIndex{}
	for i, p := range ps {
		if p.Enabled() {
			vi.docs = append(vi.docs, p)
			vi.vecs = append(vi.vecs, unit(stored[hashes[i]]))
		}
	}
	s.cur.Store(vi)
	return nil
}

// Ready reports whether vectors are loaded.
func (s *Semantic) Ready() bool { return s.cur.Load() != nil }

// Search embeds query and returns the limit closest tools.
func (s *Semantic) Search(ctx context.Context, query string, limit int) ([]Result, error) {
	vi := s.cur.Load()
	if vi == nil {
		return nil, fmt.Errorf("semantic search: no vectors yet")
	}
	vecs, err := s.Embedder.Embed(ctx, []string{query})
	if err != nil {
		return nil, err
	}
	q := unit(vecs[0])
	out := make([]Result, 0, len(vi.docs))
	for i, v := range vi.vecs {
		if len(v) != len(q) {
			continue // another model's dimension: skipped, not wrong
		}
		var dot float64
		for j := range v {
			dot += float64(v[j]) * float64(q[j])
		}
		if dot > 0 {
			out = append(out, Result{Name: vi.docs[i].Name, Title: vi.docs[i].Title, Score: dot, Plugin: vi.docs[i]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out[:min(limit, len(out))], nil
}

// rrfK is reciprocal rank fusion's constant: a tool at rank r in a list
// scores 1/(rrfK + r).
const rrfK = 60

// Fuse merges rankings by reciprocal rank fusion: a tool ranked well by
// either, or fairly by both, comes first. Scores are the fused ones.
func Fuse(limit int, lists ...[]Result) []Result {
	byName := map[string]*Result{}
	var order []string
	for _, list := range lists {
		for rank, r := range list {
			f, ok := byName[r.Name]
			if !ok {
				c := r
				c.Score = 0
				f = &c
				byName[r.Name] = f
				order = append(order, r.Name)
			}
			f.Score += 1 / float64(rrfK+rank+1)
		}
	}
	out := make([]Result, 0, len(order))
	for _, name := range order {
		out = append(out, *byName[name])
	}
	sort.Slice(out, func(i, j int) bool { return worse(out[j], out[i]) })
	return out[:min(limit, len(out))]
}

// embeddingText is what a tool's vector stands for: its words, not its
// wiring.
func embeddingText(p *plugins.Plugin) string {
	parts := []string{strings.NewReplacer("_", " ", "-", " ").Replace(p.Name), p.Title, p.Description}
	parts = append(parts, p.Tags...)
	parts = append(parts, p.Keywords...)
	text := strings.Join(parts, "\n")
	const maxText = 4000 // within any embedding model's input
	if len(text) > maxText {
		text = strings.ToValidUTF8(text[:maxText], "")
	}
	return text
}

func contentHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	n = math.Sqrt(n)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}
