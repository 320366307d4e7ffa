package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

// TestMCPContentWhole: an imported tool keeps its outputSchema, and an
// upstream tool's every content block — text,
// image, audio, embedded resources (text and blob), a resource link — and
// its structured content reach an MCP client of /mcp as the tool gave
// them, each field that echoes the user's credential masked (binary data
// decoded, masked, encoded again), the others byte for byte; the model's
// form (/v1/tools/{name}/call's output) says what each binary block was
// instead of carrying it (issue 48 point 1).
func TestMCPContentWhole(t *testing.T) {
	e := newMCPEnv(t, testdb.Open(t, store.DialectSQLite))
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR-clean-image")
	leaky := []byte("RIFF....WAVE " + medSecret + " tail")
	blob := []byte{0, 1, 2, 3, 255, 254}
	e.up.MCP.AddTool(&sdk.Tool{Name: "media", Description: "Returns every kind of content.", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"},"token":{"type":"string"}},"required":["n"]}`)},
		func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{
				Content: []sdk.Content{
					&sdk.TextContent{Text: "token " + medSecret},
					&sdk.ImageContent{Data: png, MIMEType: "image/png"},
					&sdk.AudioContent{Data: leaky, MIMEType: "audio/wav"},
					&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///notes.txt", MIMEType: "text/plain", Text: "key=" + medSecret}},
					&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "file:///data.bin", MIMEType: "application/octet-stream", Blob: blob}},
					&sdk.ResourceLink{URI: "https://files.example/report?sig=" + medSecret, Name: "report", MIMEType: "application/pdf"},
				},
				StructuredContent: map[string]any{"n": 1, "token": medSecret},
			}, nil
		})
	e.register()
	if code, out := e.do("POST", "/v1/plugins/import/mcp", mcpAdmin, map[string]any{"server": "med", "user_id": 7}); code != 200 {
		t.Fatalf("import: %d %v", code, out)
	}
	if _, err := e.st.SetPluginsConsequential(t.Context(), []string{"media"}, new("0"), "admin"); err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "t", Version: "1"}, nil).
		Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: e.url + "/mcp", HTTPClient: &http.Client{Transport: Bearer(e.userTok)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if out, _ := json.Marshal(tl.OutputSchema); tl.Name == "media" && !strings.Contains(string(out), `"required":["n"]`) {
			t.Errorf("media's outputSchema in tools/list: %s", out)
		}
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "media", Arguments: map[string]any{}})
	if err != nil || res.IsError || len(res.Content) != 6 {
		t.Fatalf("media over /mcp: %+v, %v", res, err)
	}
	all, _ := json.Marshal(res)
	if strings.Contains(string(all), medSecret) || bytes.Contains(all, []byte(medSecret)) {
		t.Errorf("the credential reached the client: %s", all)
	}
	if c, ok := res.Content[0].(*sdk.TextContent); !ok || !strings.HasPrefix(c.Text, "token ") {
		t.Errorf("text: %#v", res.Content[0])
	}
	if c, ok := res.Content[1].(*sdk.ImageContent); !ok || !bytes.Equal(c.Data, png) || c.MIMEType != "image/png" {
		t.Errorf("image: %#v, want its bytes unchanged", res.Content[1])
	}
	if c, ok := res.Content[2].(*sdk.AudioContent); !ok || c.MIMEType != "audio/wav" || bytes.Contains(c.Data, []byte(medSecret)) || !bytes.HasPrefix(c.Data, []byte("RIFF....WAVE ")) || !bytes.HasSuffix(c.Data, []byte(" tail")) {
		t.Errorf("audio: %q, want the credential in its data masked, the rest kept", res.Content[2].(*sdk.AudioContent).Data)
	}
	if c, ok := res.Content[3].(*sdk.EmbeddedResource); !ok || c.Resource.URI != "file:///notes.txt" || !strings.HasPrefix(c.Resource.Text, "key=") {
		t.Errorf("text resource: %#v", res.Content[3])
	}
	if c, ok := res.Content[4].(*sdk.EmbeddedResource); !ok || !bytes.Equal(c.Resource.Blob, blob) {
		t.Errorf("blob resource: %#v, want its bytes unchanged", res.Content[4])
	}
	if c, ok := res.Content[5].(*sdk.ResourceLink); !ok || c.Name != "report" || !strings.HasPrefix(c.URI, "https://files.example/report?sig=") {
		t.Errorf("resource link: %#v", res.Content[5])
	}
	if sc, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(sc), `"n":1`) || !strings.Contains(string(sc), `"token"`) {
		t.Errorf("structuredContent: %s", sc)
	}

	// The model's form: what each binary block was, not its data.
	code, out := e.do("POST", "/v1/tools/media/call", e.userTok, map[string]any{})
	b, _ := json.Marshal(out)
	if code != 200 || !strings.Contains(string(b), fmt.Sprintf("image/png, %d bytes: passed whole to MCP clients", len(png))) || strings.Contains(string(b), medSecret) ||
		!strings.Contains(string(b), "binary resource, application/octet-stream, 6 bytes") {
		t.Errorf("the model's form: %d %s", code, b)
	}
}
