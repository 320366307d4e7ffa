package searcheval

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"unicode"

	"github.com/blindexec/blindexec/internal/openaitest"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
	openai "github.com/sashabaranov/go-openai"
)

// estimateTokens estimates a text's tokens with no tokenizer at hand: a
// token per four characters of other text, one per CJK character (both
// on the high side for OpenAI's tokenizers).
func estimateTokens(s string) int {
	other, cjk := 0, 0
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			cjk++
		} else {
			other++
		}
	}
	return cjk + (other+3)/4
}

// TestExpansionCost has the scripted model asked about every tool of the
// catalog of all sets (4,070 tools, in English and Chinese), and reports
// what the prompts cost per 1,000 tools (docs/tool-search.md): the
// scripted answers are only there to be stored, they are not measured
// for recall (a scripted model writing the test's requests would be a
// hard-coded result). Every prompt stays within its bound.
func TestExpansionCost(t *testing.T) {
	if testing.Short() {
		t.Skip("asks about 4,000 tools")
	}
	e := loadEvaluation(t)
	st := testdb.Open(t, store.DialectSQLite)
	m := openaitest.New(t)
	n := len(e.all.Plugins)
	for range n {
		m.Script(openaitest.Turn{Content: `["a request"]`})
	}
	exp := &toolsearch.Expansion{Client: openai.NewClientWithConfig(m.Config()), Model: "cost", Store: st}
	asked, err := exp.Update(context.Background(), e.all.Plugins)
	if err != nil {
		t.Fatal(err)
	}
	in, most := 0, 0
	for _, body := range m.Requests() {
		var req struct {
			MaxTokens int                            `json:"max_tokens"`
			Messages  []openai.ChatCompletionMessage `json:"messages"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			t.Fatal(err)
		}
		if req.MaxTokens != 300 {
			t.Errorf("max_tokens %d, want 300", req.MaxTokens)
		}
		k := 0
		for _, msg := range req.Messages {
			k += estimateTokens(msg.Content) + 4 // a message's framing
		}
		in += k
		most = max(most, k)
	}
	if most > 2500 {
		t.Errorf("a prompt of about %d tokens: over its bound", most)
	}
	per := func(x int) string { return fmt.Sprintf("%.0f", float64(x)*1000/float64(asked)) }
	t.Logf("%d tools, %d asked: prompt tokens (estimated) %s per 1,000 tools, at most %d for one; answer at most %s per 1,000 tools (max_tokens 300)",
		n, asked, per(in), most, per(300*asked))
}
