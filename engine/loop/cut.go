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

// cutTexts cuts the longest texts to one length, measured as JSON
// encodes them, so that together they encode at least over bytes shorter
// (markers counted). It reports false when even cutting every text to
// nothing would not do.
func cutTexts(texts []*string, over int) bool {
	enc := make([]int, len(texts))
	total, longest := 0, 0
	for i, t := range texts {
		enc[i] = encodedLen(*t)
		total += len(*t)
		longest = max(longest, enc[i])
	}
	markerLen := len(fmt.Sprintf(cutMarker, total)) // the longest a marker gets
	// The largest length keep such that cutting every longer text to it
	// (plus its marker) saves over bytes: saving falls as keep grows.
	saved := func(keep int) int {
		n := 0
		for _, e := range enc {
			if e > keep+markerLen {
				n += e - keep - markerLen
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
	for i, t := range texts {
		if enc[i] > lo+markerLen {
			n := prefixWithin(*t, lo)
			*t = (*t)[:n] + fmt.Sprintf(cutMarker, len(*t)-n)
		}
	}
	return true
}

// encodedLen is the length of s inside a JSON string as encoding/json
// writes it (HTML characters escaped).
func encodedLen(s string) int {
	n, _ := encoded(s, -1)
	return n
}

// prefixWithin is the longest prefix of s, ending on a whole character,
// that JSON encodes in at most n bytes.
func prefixWithin(s string, n int) int {
	_, end := encoded(s, n)
	for end > 0 && end < len(s) && !utf8.RuneStart(s[end]) {
		end--
	}
	return end
}

// encoded walks s while its JSON encoding stays within limit bytes (no
// limit when negative): the encoding's length and the bytes walked.
func encoded(s string, limit int) (cost, end int) {
	for i := 0; i < len(s); i++ {
		c := 1
		switch b := s[i]; {
		case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t' || b == '\b' || b == '\f':
			c = 2
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			c = 6
		case b == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9):
			c = 4 // U+2028 and U+2029 become \u2028: 6 bytes, with their next two
		}
		if limit >= 0 && cost+c > limit {
			return cost, i
		}
		cost += c
	}
	return cost, len(s)
}
