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

// maxAsked bounds the last user message a run keeps, in characters.
const maxAsked = 2000

// Stored is what a run keeps of its request's messages for the people
// who read it.
type Stored struct {
	// Messages are the newest maxStoredMessages, each text cut to 16 KiB
	// (at a rune, "…" appended), as JSON.
	Messages []byte
	// First is the start of the first user message (200 characters at
	// most, white space collapsed); Asked, the last user message (2,000
	// characters at most), which an approval quotes.
	First, Asked string
}

// StoredMessages is what a run keeps of msgs. The request's messages
// hold no credential (a payload carries those apart).
func StoredMessages(msgs []openai.ChatCompletionMessage) Stored {
	var out Stored
	last := lastUser(msgs)
	for i, m := range msgs {
		if m.Role != openai.ChatMessageRoleUser {
			continue
		}
		if out.First == "" {
			out.First = cutRunes(strings.Join(strings.Fields(messageText(m)), " "), maxFirstMessage)
		}
		if i == last {
			out.Asked = cutRunes(messageText(m), maxAsked)
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
	out.Messages, _ = json.Marshal(kept) // plain structs of strings: no error
	return out
}

// lastUser is the index of the last user message of msgs, -1 when none.
func lastUser(msgs []openai.ChatCompletionMessage) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == openai.ChatMessageRoleUser {
			return i
		}
	}
	return -1
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
