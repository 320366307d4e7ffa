package openaitest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
)

// post sends a chat completion request and returns the response body.
func post(t *testing.T, s *Server, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := egresstest.Client(t).Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp, b.Bytes()
}

// TestStreamWireFormat checks the chunk sequence of a streamed answer with
// content and two parallel tool calls.
func TestStreamWireFormat(t *testing.T) {
	s := New(t)
	s.Script(Turn{
		Content:   "好的",
		ToolCalls: []ToolCall{{ID: "call_a", Name: "f", Arguments: `{"k":"字节"}`}, {Name: "g", Arguments: `{}`}},
		Chunk:     2, WireChunk: 3, EscapeNonASCII: true,
	})
	_, body := post(t, s, `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`)
	if bytes.ContainsFunc(body, func(r rune) bool { return r > 127 }) {
		t.Errorf("EscapeNonASCII: the stream has non-ASCII bytes")
	}
	var data []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, line)
		}
	}
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last event = %q", data[len(data)-1])
	}
	type chunk struct {
		Choices []struct {
			Delta        map[string]json.RawMessage `json:"delta"`
			FinishReason *string                    `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
	}
	var chunks []chunk
	for _, d := range data[:len(data)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %s: %v", d, err)
		}
		chunks = append(chunks, c)
	}
	first, usage := chunks[0], chunks[len(chunks)-1]
	if len(first.Choices[0].Delta) != 2 || string(first.Choices[0].Delta["role"]) != `"assistant"` || string(first.Choices[0].Delta["content"]) != `""` {
		t.Errorf("first delta = %v, want role only", first.Choices[0].Delta)
	}
	if len(usage.Choices) != 0 || !bytes.Contains(usage.Usage, []byte("prompt_tokens")) {
		t.Errorf("last chunk: choices %v, usage %s", usage.Choices, usage.Usage)
	}
	finish := chunks[len(chunks)-2].Choices[0]
	if finish.FinishReason == nil || *finish.FinishReason != "tool_calls" {
		t.Errorf("finish chunk = %+v", finish)
	}
	var content string
	var order []int
	args := map[int]string{}
	for _, c := range chunks[1 : len(chunks)-2] {
		if string(c.Usage) != "null" || c.Choices[0].FinishReason != nil {
			t.Errorf("a middle chunk has usage %s or a finish_reason", c.Usage)
		}
		d := c.Choices[0].Delta
		if raw, ok := d["content"]; ok {
			var s string
			json.Unmarshal(raw, &s)
			content += s
		}
		var calls []struct {
			Index    int               `json:"index"`
			ID       string            `json:"id"`
			Function map[string]string `json:"function"`
		}
		json.Unmarshal(d["tool_calls"], &calls)
		for _, tc := range calls {
			_, seen := args[tc.Index]
			if named := tc.ID != "" && tc.Function["name"] != ""; named == seen {
				t.Errorf("delta for index %d: id %q, name %q (first delta: %v)", tc.Index, tc.ID, tc.Function["name"], !seen)
			}
			args[tc.Index] += tc.Function["arguments"]
			order = append(order, tc.Index)
		}
	}
	if content != "好的" || args[0] != `{"k":"字节"}` || args[1] != `{}` {
		t.Errorf("content %q, arguments %v", content, args)
	}
	if len(order) < 4 || order[0] != 0 || order[1] != 1 || order[2] != 0 || order[3] != 1 {
		t.Errorf("index order = %v, want interleaved", order)
	}
}

func TestFaults(t *testing.T) {
	s := New(t)
	s.Script(Turn{Status: http.StatusTooManyRequests, RetryAfter: "2"}, Turn{Content: "hi"})
	resp, body := post(t, s, `{"model":"m"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "2" || !bytes.Contains(body, []byte(`"error"`)) {
		t.Errorf("fault: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	resp, body = post(t, s, `{"model":"m"}`)
	var c struct {
		Object  string `json:"object"`
		Choices []struct {
			Message      map[string]any `json:"message"`
			FinishReason string         `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &c); err != nil || resp.StatusCode != 200 || c.Object != "chat.completion" ||
		c.Choices[0].Message["content"] != "hi" || c.Choices[0].FinishReason != "stop" {
		t.Errorf("answer: %d %s", resp.StatusCode, body)
	}
	if got := s.Requests(); len(got) != 2 || string(got[0]) != `{"model":"m"}` {
		t.Errorf("requests = %q", got)
	}
}

// TestTooManyTools: like OpenAI, more than 128 tools are refused with 400
// and the scripted turn is left for the next request.
func TestTooManyTools(t *testing.T) {
	tools := func(n int) string {
		ts := make([]string, n)
		for i := range ts {
			ts[i] = fmt.Sprintf(`{"type":"function","function":{"name":"f%d","parameters":{"type":"object"}}}`, i)
		}
		return `{"model":"m","tools":[` + strings.Join(ts, ",") + `]}`
	}
	s := New(t)
	s.Script(Turn{Content: "hi"})
	resp, body := post(t, s, tools(129))
	var e struct {
		Error struct{ Message, Type, Param, Code string }
	}
	if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != http.StatusBadRequest ||
		e.Error.Code != "array_above_max_length" || e.Error.Param != "tools" || e.Error.Type != "invalid_request_error" ||
		!strings.Contains(e.Error.Message, "maximum length 128, but got an array with length 129") {
		t.Errorf("129 tools: %d %s", resp.StatusCode, body)
	}
	if s.Pending() != 1 {
		t.Errorf("the refused request took the scripted turn")
	}
	if resp, body = post(t, s, tools(128)); resp.StatusCode != http.StatusOK {
		t.Errorf("128 tools: %d %s", resp.StatusCode, body)
	}
}

func TestSplit(t *testing.T) {
	got := split(`a"字\u00e9😀`, 2)
	want := []string{`a"`, `字\`, `u0`, `0e`, `9😀`}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("split = %q, want %q", got, want)
	}
	if esc := string(escapeNonASCII([]byte(`"字😀"`))); esc != `"\u5b57\ud83d\ude00"` {
		t.Errorf("escapeNonASCII = %s", esc)
	}
}
