package loop

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// TestStoredMessages: what a run keeps of its request — the first user
// message's start, each text cut at a rune, the newest messages, and the
// last user message an approval quotes.
func TestStoredMessages(t *testing.T) {
	long := strings.Repeat("删", maxStoredText) // 3 bytes a rune
	parts := openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{
		{Type: openai.ChatMessagePartTypeText, Text: "look at"}, {Type: openai.ChatMessagePartTypeImageURL, ImageURL: &openai.ChatMessageImageURL{URL: "https://x/y.png"}},
		{Type: openai.ChatMessagePartTypeText, Text: "this"}}}
	many := make([]openai.ChatCompletionMessage, maxStoredMessages+5)
	for i := range many {
		many[i] = openai.ChatCompletionMessage{Role: openai.ChatMessageRoleUser, Content: string(rune('a' + i%26))}
	}
	for _, tt := range []struct {
		name  string
		msgs  []openai.ChatCompletionMessage
		first string
		asked string
		kept  int
	}{
		{"none", nil, "", "", 0},
		{"system then user", []openai.ChatCompletionMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "  删除客户\n cus_456 "},
			{Role: "assistant", Content: "ok"}, {Role: "user", Content: "and cus_789"}}, "删除客户 cus_456", "and cus_789", 4},
		{"text parts", []openai.ChatCompletionMessage{parts}, "look at this", "look at this", 1},
		{"a long text is cut at a rune", []openai.ChatCompletionMessage{{Role: "user", Content: long}}, strings.Repeat("删", maxFirstMessage-1) + "…",
			strings.Repeat("删", maxAsked-1) + "…", 1},
		{"the newest messages", many, "a", string(rune('a' + (len(many)-1)%26)), maxStoredMessages},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := StoredMessages(tt.msgs)
			if st.First != tt.first || st.Asked != tt.asked {
				t.Errorf("first %q, asked %q; want %q, %q", st.First, st.Asked, tt.first, tt.asked)
			}
			var kept []openai.ChatCompletionMessage
			if err := json.Unmarshal(st.Messages, &kept); err != nil || len(kept) != tt.kept {
				t.Fatalf("kept %d messages (%v), want %d", len(kept), err, tt.kept)
			}
			for _, m := range kept {
				if len(m.Content) > maxStoredText || !utf8.ValidString(m.Content) {
					t.Errorf("a text kept: %d bytes, valid %v", len(m.Content), utf8.ValidString(m.Content))
				}
			}
		})
	}
}
