package loop

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
)

// Bounds of what a run keeps of its request for the people who read it
// (issue 51 point 2): each message's text, the start of the first user
// message, and the newest messages when a conversation is longer.
const (
	maxStoredText     = 16 << 10
	maxStoredMessages = 200
	maxFirstMessage   = 200
)

// StoredMessages is what a run keeps of its request's messages: the
// newest maxStoredMessages, each text cut to 16 KiB (cut at a rune, "…"
// appended), as JSON; and the start of the first user message, at most
// 200 characters. The request's messages hold no credential (a payload
// carries those apart).
func StoredMessages(msgs []openai.ChatCompletionMessage) (stored []byte, first string) {
	for _, m := range msgs {
		if m.Role == openai.ChatMessageRoleUser {
			first = cutRunes(strings.Join(strings.Fields(messageText(m)), " "), maxFirstMessage)
			break
		}
	}
	if len(msgs) > maxStoredMessages {
		msgs = msgs[len(msgs)-maxStoredMessages:]
	}
	kept := make([]openai.ChatCompletionMessage, len(msgs))
	for i, m := range msgs {
		m.Content = cutBytes(m.Content, maxStoredText)
		if len(m.MultiContent) > 0 {
			parts := make([]openai.ChatMessagePart, len(m.MultiContent))
			for j, p := range m.MultiContent {
				p.Text = cutBytes(p.Text, maxStoredText)
				parts[j] = p
			}
			m.MultiContent = parts
		}
		kept[i] = m
	}
	stored, err := json.Marshal(kept)
	if err != nil {
		return nil, first
	}
	return stored, first
}

// LastUserText is the text of the last user message of stored (as
// StoredMessages wrote it), at most max characters; "" when there is none.
func LastUserText(stored []byte, max int) string {
	var msgs []openai.ChatCompletionMessage
	if len(stored) == 0 || json.Unmarshal(stored, &msgs) != nil {
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleUser {
			return cutRunes(messageText(msgs[i]), max)
		}
	}
	return ""
}

// messageText is a message's text: its content, or its text parts.
func messageText(m openai.ChatCompletionMessage) string {
	if m.Content != "" || len(m.MultiContent) == 0 {
		return m.Content
	}
	var b strings.Builder
	for _, p := range m.MultiContent {
		if p.Type == openai.ChatMessagePartTypeText {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// cutRunes cuts s to max characters, "…" marking a cut.
func cutRunes(s string, max int) string {
	if utf8.RuneCountInString(s) <= max {
		return s
	}
	r := []rune(s)
	return string(r[:max-1]) + "…"
}

// cutBytes cuts s to at most max bytes at a rune boundary, "…" marking a
// cut.
func cutBytes(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
