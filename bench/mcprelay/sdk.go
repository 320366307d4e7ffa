// Package mcprelay holds the gateway benchmark's bare MCP relays: the
// least an MCP server can cost on the go-sdk (NewSDK) and without an SDK
// (Raw). Both make the same direct call to the upstream.
package mcprelay

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The relays' one tool and the upstream's key.
const (
	Tool   = "search_company_basic"
	APIKey = "sk-bench-0123456789"
)

// Call is the direct call of a relay.
func Call(ctx context.Context, client *http.Client, upstream, keyword string) ([]byte, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", upstream+"/ECIV4/Search?keyword="+url.QueryEscape(keyword), nil)
	req.Header.Set("Token", APIKey)
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("upstream: HTTP %d", resp.StatusCode)
	}
	return body, err
}

// NewSDK is the least an MCP server over the go-sdk can cost: one tool,
// with the plugin's schema, making the direct call.
func NewSDK(upstream string) *sdk.Server {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	s := sdk.NewServer(&sdk.Implementation{Name: "bare-relay", Version: "1"}, nil)
	schema := json.RawMessage(`{"type":"object","required":["keyword"],"properties":{"keyword":{"type":"string"},"page_index":{"type":"integer","default":1}}}`)
	s.AddTool(&sdk.Tool{Name: Tool, Description: "search", InputSchema: schema},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args struct {
				Keyword string `json:"keyword"`
			}
			if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
				return nil, err
			}
			body, err := Call(ctx, client, upstream, args.Keyword)
			if err != nil {
				return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(body)}}}, nil
		})
	return s
}
