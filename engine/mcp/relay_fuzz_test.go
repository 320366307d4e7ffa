package mcp

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
)

// FuzzRelayMask: an upstream's tools/call result, whatever it holds and
// wherever it echoes the call's secret (a text, a URI, structured
// content, _meta, an image's or a resource's bytes), is relayed to an MCP
// client and shown to the model with no string, and no binary block
// decoded, holding the secret.
func FuzzRelayMask(f *testing.F) {
	const secret = "sk-live-0123456789"
	b64 := base64.StdEncoding.EncodeToString([]byte("\x89PNG" + secret + "\x00"))
	for _, s := range []string{
		`{"content":[{"type":"text","text":"key sk-live-0123456789"}]}`,
		`{"content":[{"type":"image","mimeType":"image/png","data":"` + b64 + `"}]}`,
		`{"content":[{"type":"resource","resource":{"uri":"file:///sk-live-0123456789","blob":"` + b64 + `"}}]}`,
		`{"content":[{"type":"resource_link","uri":"https://x.test/?k=sk-live-0123456789","name":"n"}],"structuredContent":{"sk-live-0123456789":["sk\/live"]}}`,
		`{"content":[{"type":"audio","mimeType":"audio/wav","data":"` + base64.StdEncoding.EncodeToString([]byte(secret)) + `"}],"_meta":{"k":"sk-live-0123456789"},"isError":true}`,
		`{"content":[{"type":"text","text":"sk-live-\u0030123456789"}]}`,
	} {
		f.Add([]byte(s), secret)
	}
	f.Fuzz(func(t *testing.T, raw []byte, secret string) {
		if len(secret) < auth.MinMaskLen || !utf8.ValidString(secret) || strings.Contains(secret, "\x00") || len(raw) > 16<<10 {
			t.Skip()
		}
		var res sdk.CallToolResult
		if json.Unmarshal(raw, &res) != nil {
			return
		}
		whole, model := relay{ResultOf(&res)}.Mask(auth.NewMasker(secret))
		for name, b := range map[string][]byte{"relayed": whole, "model's": model} {
			if leak := holds(b, secret); leak != "" {
				t.Fatalf("the %s form of %s holds the secret %q in %q: %s", name, raw, secret, leak, b)
			}
		}
		if whole == nil {
			return
		}
		var back sdk.CallToolResult
		if err := json.Unmarshal(whole, &back); err != nil {
			t.Fatalf("relayed %s does not decode: %v", whole, err)
		}
		for _, c := range back.Content {
			var data []byte
			switch c := c.(type) {
			case *sdk.ImageContent:
				data = c.Data
			case *sdk.AudioContent:
				data = c.Data
			case *sdk.EmbeddedResource:
				if c.Resource != nil {
					data = c.Resource.Blob
				}
			}
			if strings.Contains(strings.ReplaceAll(string(data), auth.Redacted, "\x00"), secret) {
				t.Fatalf("a binary block of %s relayed holds the secret: %q", raw, data)
			}
		}
	})
}

// holds is a string of the JSON text b (a key or a value, decoded) that
// still holds secret, or b itself when it is not JSON; "" when none does.
func holds(b []byte, secret string) string {
	clean := func(s string) bool { return !strings.Contains(strings.ReplaceAll(s, auth.Redacted, "\x00"), secret) }
	var v any
	if json.Unmarshal(b, &v) != nil {
		if clean(string(b)) {
			return ""
		}
		return string(b)
	}
	var walk func(v any) string
	walk = func(v any) string {
		switch v := v.(type) {
		case string:
			if !clean(v) {
				return v
			}
		case []any:
			for _, e := range v {
				if s := walk(e); s != "" {
					return s
				}
			}
		case map[string]any:
			for k, e := range v {
				if !clean(k) {
					return k
				}
				if s := walk(e); s != "" {
					return s
				}
			}
		}
		return ""
	}
	return walk(v)
}
