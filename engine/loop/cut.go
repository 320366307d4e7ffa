package loop

import (
	"encoding/json"
	"fmt"
	"slices"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// MarshalWithin is the JSON of r in at most max bytes, for storing: when r
// is longer, its longest texts (message contents, tool call arguments,
// step arguments and errors) are cut to a common length, each cut marked
// "…[cut: N more bytes]", and Cut is set. The other fields stay whole. r
// itself is left as it is.
func MarshalWithin(r *Reply, max int) ([]byte, error) {
	b, err := json.Marshal(r)
	if err != nil || len(b) <= max {
		return b, err
	}
	c := *r
	c.Cut = true
	c.Messages = slices.Clone(r.Messages)
	c.Steps = slices.Clone(r.Steps)
	var texts []*string
	addMessage := func(m *openai.ChatCompletionMessage) {
		m.ToolCalls = slices.Clone(m.ToolCalls)
		texts = append(texts, &m.Content, &m.ReasoningContent)
		for i := range m.ToolCalls {
			texts = append(texts, &m.ToolCalls[i].Function.Arguments)
		}
	}
	for i := range c.Messages {
		addMessage(&c.Messages[i])
	}
	if r.Message != nil {
		m := *r.Message
		c.Message = &m
		addMessage(c.Message)
	}
	args := make([]string, len(c.Steps))
	for i := range c.Steps {
		args[i] = string(c.Steps[i].Arguments)
		texts = append(texts, &args[i], &c.Steps[i].Error)
	}
	// JSON escapes make a text longer than its bytes: cut again by what
	// is still over, a few times at most.
	for over := len(b) - max; over > 0; over = len(b) - max {
		if !cutTexts(texts, over) {
			return json.Marshal(&Reply{RunID: r.RunID, Status: r.Status, Messages: []openai.ChatCompletionMessage{}, Steps: []Step{},
				Usage: r.Usage, Error: r.Error, Cut: true})
		}
		for i := range c.Steps {
			if string(c.Steps[i].Arguments) != args[i] {
				c.Steps[i].Arguments, _ = json.Marshal(args[i]) // a cut text is no longer JSON
			}
		}
		if b, err = json.Marshal(&c); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// cutMarker marks a cut text; its %d is the bytes cut.
const cutMarker = "…[cut: %d more bytes]"

// cutTexts cuts the longest texts to one length, so that together they
// are at least over bytes shorter (markers counted). It reports false when
// even cutting every text to nothing would not do.
func cutTexts(texts []*string, over int) bool {
	total, longest := 0, 0
	for _, t := range texts {
		total += len(*t)
		longest = max(longest, len(*t))
	}
	markerLen := len(fmt.Sprintf(cutMarker, total)) // the longest a marker gets
	// The largest length keep such that cutting every longer text to it
	// (plus its marker) saves over bytes: saving falls as keep grows.
	saved := func(keep int) int {
		n := 0
		for _, t := range texts {
			if len(*t) > keep+markerLen {
				n += len(*t) - keep - markerLen
			}
		}
		return n
	}
	if saved(0) < over {
		return false
	}
	lo, hi := 0, longest // saved(lo) >= over
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if saved(mid) >= over {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	for _, t := range texts {
		if len(*t) > lo+markerLen {
			*t = cut(*t, lo)
		}
	}
	return true
}

// cut keeps the first keep bytes of s (fewer, to end on a whole
// character) and the marker.
func cut(s string, keep int) string {
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + fmt.Sprintf(cutMarker, len(s)-keep)
}
