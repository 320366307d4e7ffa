package engine

// NeededConnection reads a CodeConnectionRequired error (issue 34): the
// provider the user must connect an account at, the scopes the tool
// needs and those the user's connection lacks. ok is false for any other
// error. The LLM loop and the MCP server turn it into a start URL.
func NeededConnection(te *ToolError) (provider string, scopes, missing []string, ok bool) {
	if te == nil || te.Code != CodeConnectionRequired {
		return "", nil, nil, false
	}
	d, _ := te.Details.(map[string]any)
	provider, _ = d["provider"].(string)
	scopes, _ = d["scopes"].([]string)
	missing, _ = d["missing_scopes"].([]string)
	return provider, scopes, missing, provider != ""
}
