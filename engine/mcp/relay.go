package mcp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/auth"
)

// relay is an MCP tool's result as an engine.Relay: every content block
// (text, image, audio, embedded resource, resource link) and the
// structured content pass to an MCP client unchanged but for masking
// (issue 48 point 1).
type relay struct{ res Result }

// Mask implements engine.Relay. Binary data (image and audio data, a
// resource's blob) is masked decoded — a secret in it is replaced as in
// text, and the data encoded again — then every string of the result
// (texts, URIs, structured content, _meta) as JSON. The model's form
// says what each binary block was instead of carrying it. A result whose
// masking leaves no valid JSON is not relayed (whole is nil): the client
// then reads the model's form, as other tools' results.
func (r relay) Mask(m *auth.Masker) (whole, model json.RawMessage) {
	content := make([]sdk.Content, len(r.res.Content))
	for i, c := range r.res.Content {
		content[i] = maskBinary(c, m)
	}
	out := r.res
	out.Content = content
	b, err := json.Marshal(out)
	if err != nil {
		return nil, nil
	}
	if b = m.Bytes(b); !json.Valid(b) {
		return nil, m.Bytes(b)
	}
	return b, describeBinary(b)
}

// maskBinary is c with its binary data masked (a copy when changed).
func maskBinary(c sdk.Content, m *auth.Masker) sdk.Content {
	switch c := c.(type) {
	case *sdk.ImageContent:
		if d, ok := masked(c.Data, m); ok {
			cp := *c
			cp.Data = d
			return &cp
		}
	case *sdk.AudioContent:
		if d, ok := masked(c.Data, m); ok {
			cp := *c
			cp.Data = d
			return &cp
		}
	case *sdk.EmbeddedResource:
		if rc := c.Resource; rc != nil && len(rc.Blob) > 0 {
			if d, ok := masked(rc.Blob, m); ok {
				res := *rc
				res.Blob = d
				cp := *c
				cp.Resource = &res
				return &cp
			}
		}
	}
	return c
}

// masked is b masked, and whether masking changed it (Masker.Bytes
// returns b itself when it holds no secret).
func masked(b []byte, m *auth.Masker) ([]byte, bool) {
	if len(b) == 0 {
		return b, false
	}
	d := m.Bytes(b)
	return d, len(d) != len(b) || &d[0] != &b[0]
}

// describeBinary is the model's form of a relayed result (JSON): each
// image's and audio's data, and each resource's blob, replaced by a note
// saying what it was — its kind, MIME type and size — since a model reads
// text, and base64 would only spend its budget.
func describeBinary(whole json.RawMessage) json.RawMessage {
	var doc map[string]any
	if json.Unmarshal(whole, &doc) != nil {
		return whole
	}
	blocks, _ := doc["content"].([]any)
	changed := false
	for _, b := range blocks {
		block, _ := b.(map[string]any)
		switch block["type"] {
		case "image", "audio":
			if data, ok := block["data"].(string); ok {
				delete(block, "data")
				block["note"] = note(block["type"].(string), block["mimeType"], data)
				changed = true
			}
		case "resource":
			res, _ := block["resource"].(map[string]any)
			if blob, ok := res["blob"].(string); ok {
				delete(res, "blob")
				res["note"] = note("binary resource", res["mimeType"], blob)
				changed = true
			}
		}
	}
	if !changed {
		return whole
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return whole
	}
	return b
}

// note describes binary data (base64) for the model.
func note(kind string, mime any, data string) string {
	n, err := base64.StdEncoding.DecodeString(data)
	size := len(n)
	if err != nil {
		size = base64.StdEncoding.DecodedLen(len(data))
	}
	t, _ := mime.(string)
	if t == "" {
		t = "no MIME type"
	}
	return fmt.Sprintf("(%s, %s, %d bytes: passed whole to MCP clients, not shown here)", kind, t, size)
}
