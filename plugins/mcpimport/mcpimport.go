// Package mcpimport converts the tools of a registered MCP server into
// plugins of execution.type "mcp"; package importer lists a server's tools
// and writes the result (`blindexec import mcp`, POST
// /v1/plugins/import/mcp).
//
// Each tool becomes one plugin:
//
//   - name: the tool's name without its invisible characters, every
//     other character outside [a-zA-Z0-9_-] replaced by "_" (rb.answer →
//     rb_answer). When another plugin already
//     has that name (another server's tool, a hand-written plugin), the
//     server's name is prefixed (runbook_rb_answer); a name still taken, or
//     longer than 64, is cut and given a hash suffix derived from the
//     server id and the tool name, so the result is deterministic. A tool
//     keeps its plugin's name across re-imports.
//   - description: the tool's description (else its title, else its name).
//   - parameters: inputSchema through the shared resolver (package
//     plugins/schema) with depth limit 3, as seed 004 FR-003/FR-006 says:
//     $defs inlined and removed, cycles pruned to their type, one bad
//     property degraded without failing the tool.
//   - execution: {type: mcp, mcp_id, tool_name: the original name}.
//   - auth_config and required_credentials: the server's, so that the
//     executor resolves the user's credentials the server needs.
//
// Re-importing is a sync (package importer) against the server's earlier
// import: new tools are added, changed ones updated, unchanged ones not
// written, and plugins whose tool is gone are disabled.
package mcpimport

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/blindexec/blindexec/internal/invisible"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/schema"
)

// DefaultMaxDepth is the reference depth limit of MCP tool schemas
// (seed 004 FR-003).
const DefaultMaxDepth = 3

// ConversionError is a tool whose schema or plugin is unusable.
type ConversionError struct {
	Tool string
	Err  error
}

func (e *ConversionError) Error() string { return fmt.Sprintf("tool %q: %v", e.Tool, e.Err) }
func (e *ConversionError) Unwrap() error { return e.Err }

// Server is what a tool's plugin takes from the server it calls.
type Server struct {
	ID   string
	Name string
	Auth plugins.AuthConfig // the server's auth config, its plugins' too
	// Trusted: an administrator vouches for the server, so its
	// annotations may lower a tool's class (ConsequentialHint).
	Trusted bool
}

// Convert turns one tool of srv into a plugin called name. Warnings name
// the parts of the schema the resolver degraded or pruned.
func Convert(srv Server, t *sdk.Tool, name string, maxDepth int) (*plugins.Plugin, []string, error) {
	params, written, warnings, err := Schemas(t.InputSchema, maxDepth)
	if err != nil {
		return nil, nil, &ConversionError{Tool: t.Name, Err: err}
	}
	ac := srv.Auth
	var output json.RawMessage
	var answers []string
	if t.OutputSchema != nil {
		if output, err = json.Marshal(t.OutputSchema); err == nil {
			// Held by the plugin and listed to MCP clients: bounded as
			// inputSchema is.
			err = plugins.CheckSchemaCost(output)
		}
		if err != nil {
			return nil, nil, &ConversionError{Tool: t.Name, Err: fmt.Errorf("outputSchema: %w", err)}
		}
		answers = outputWords(output)
	}
	p := &plugins.Plugin{
		SchemaVersion:       "v1",
		Name:                name,
		Title:               plugins.Cut(title(t), plugins.MaxTitleChars),
		Description:         plugins.Cut(cmp.Or(strings.TrimSpace(plugins.PlainText(t.Description)), t.Title, t.Name), plugins.MaxDescriptionChars),
		Parameters:          params,
		Execution:           plugins.Execution{Type: plugins.TypeMCP, MCPID: srv.ID, ToolName: t.Name, InputSchema: written, OutputSchema: output},
		AuthConfig:          ac,
		RequiredCredentials: append([]string{}, ac.CredentialKeys()...),
		ConsequentialHint:   ConsequentialHint(t.Annotations, srv.Trusted),
		ResponseWords:       answers,
	}
	if _, f := invisible.Remove(t.Name); f.Count > 0 { // the name is made of it (SanitizeName)
		p.InvisibleRemoved = []invisible.Removal{{Field: "name", Count: f.Count, Kinds: f.Kinds}}
	}
	p.RemoveInvisible()
	if err := p.Validate(); err != nil {
		return nil, nil, &ConversionError{Tool: t.Name, Err: err}
	}
	return p, warnings, nil
}

// title is a tool's title, else its annotations', else its description's
// first sentence, else its name's words: search weighs a title, and a
// model reads it first.
func title(t *sdk.Tool) string {
	if t.Title != "" {
		return t.Title
	}
	if t.Annotations != nil && t.Annotations.Title != "" {
		return t.Annotations.Title
	}
	return cmp.Or(plugins.TitleFrom(plugins.PlainText(t.Description)), plugins.TitleFromName(t.Name))
}

// ConsequentialHint reads a tool's annotations as hints (issue 48 point
// 2): a server nobody vetted writes its own, and could mark its delete
// tool read-only to skip confirmation. So an untrusted server's may only
// raise a tool's class — one not marked read-only is consequential — and
// only a trusted server's readOnlyHint makes a tool not consequential.
// Without annotations, or a read-only one from an untrusted server, there
// is no suggestion and the tool is consequential by MCP's defaults
// (plugins.Plugin.IsConsequential); an administrator's classification
// wins over either.
func ConsequentialHint(a *sdk.ToolAnnotations, trusted bool) *bool {
	if a == nil || (a.ReadOnlyHint && !trusted) {
		return nil
	}
	c := !a.ReadOnlyHint
	return &c
}

// Parameters converts an MCP inputSchema (as the SDK decodes it, or any
// value that marshals to a JSON object) into OpenAI function parameters.
func Parameters(inputSchema any, maxDepth int) (json.RawMessage, []string, error) {
	// Measured as JSON, against plugins.DefaultSchemaLimits, before the
	// resolver expands anything: a server's schema is outside input.
	b, err := json.Marshal(inputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	in, ok := inputSchema.(map[string]any)
	if ok {
		err = plugins.CheckSchemaCostValue(len(b), in)
	} else if err = plugins.CheckSchemaCost(b); err == nil {
		if err := json.Unmarshal(b, &in); err != nil || in == nil {
			return nil, nil, fmt.Errorf("inputSchema is not a JSON object")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	res, err := schema.Resolve(in, nil, schema.Options{MaxDepth: cmp.Or(maxDepth, DefaultMaxDepth), Parameters: true})
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	out, err := json.Marshal(res.Schema)
	if err != nil {
		return nil, nil, fmt.Errorf("inputSchema: %w", err)
	}
	return out, res.Warnings, nil
}

// Schemas converts an MCP inputSchema into what the model reads
// (Parameters) and keeps it as its server wrote it — $schema, $defs and
// $ref kept, for validating arguments and for MCP clients' tools/list
// (issue 48 point 5). A $schema the engine does not accept
// (plugins.AcceptedDialects) fails the tool; a schema that does not
// compile as written, though its resolved form does, is kept resolved
// only, with a warning.
func Schemas(inputSchema any, maxDepth int) (resolved, written json.RawMessage, warnings []string, err error) {
	if resolved, warnings, err = Parameters(inputSchema, maxDepth); err != nil {
		return nil, nil, nil, err
	}
	written, err = json.Marshal(inputSchema) // cost checked by Parameters
	if err == nil {
		err = plugins.CheckWritten(written)
	}
	var dialect *plugins.DialectError
	switch {
	case errors.As(err, &dialect):
		return nil, nil, nil, fmt.Errorf("inputSchema: %w", err)
	case err != nil:
		return resolved, nil, append(warnings, fmt.Sprintf("inputSchema: %v: validated and listed as resolved", err)), nil
	}
	return resolved, written, warnings, nil
}

// SanitizeName maps a tool name onto the OpenAI function-name rule
// ^[a-zA-Z0-9_-]{1,64}$, without shortening it. Invisible characters are
// removed, not replaced: read\u200bfile is readfile.
func SanitizeName(s string) string {
	s, _ = invisible.Remove(s)
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "tool"
	}
	return string(b)
}

// Names lists the plugin names a new tool of srv may take, in order of
// preference: its sanitized name, else prefixed with the server's name,
// else made unique by a hash suffix; each within 64 characters, and
// deterministic.
func Names(srvID, srvName, tool string) []string {
	key := srvID + "\x00" + tool
	return []string{
		fit(SanitizeName(tool), key, false),
		fit(SanitizeName(srvName+"_"+tool), key, false),
		fit(SanitizeName(srvName+"_"+tool), key, true),
	}
}

// fit cuts name to 64 characters with a suffix from the hash of key, when
// it is longer or when force is set (to make a taken name unique).
func fit(name, key string, force bool) string {
	if len(name) <= 64 && !force {
		return name
	}
	sum := sha256.Sum256([]byte(key))
	suffix := "_" + hex.EncodeToString(sum[:4])
	return name[:min(len(name), 64-len(suffix))] + suffix
}

// ServerNameFromURL names a server registered by its URL alone: its host,
// sanitized to the plugin-name rule; "" for a URL without a host.
func ServerNameFromURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	name := SanitizeName(u.Host)
	return name[:min(len(name), 64)]
}

// outputWords are the property names of a tool's outputSchema, as an
// OpenAPI import keeps its responses' (plugins.Plugin.ResponseWords).
func outputWords(output json.RawMessage) []string {
	var root map[string]any
	if json.Unmarshal(output, &root) != nil {
		return nil
	}
	return schema.PropertyNames(root, schema.JSONSchemaLookup(root))
}

// TooLargeError refuses a server's tools whole: their tools/list answer
// (Listed) or the plugins they make would be over the import's limit
// (plugins.DefaultImportMaxBytes, BLINDEXEC_IMPORT_MAX_MB). Every page of
// a tools/list is bounded alone, not their number, and a tool's schema by
// a plugin's limits, not the number of tools. Nothing is written.
type TooLargeError struct {
	Max    int    // the limit, in bytes
	Tool   string // the tool at which the total passed it
	Tools  int    // tools read up to it, that one included
	Listed bool   // the tools/list answer, not the plugins
}

func (e *TooLargeError) Error() string {
	what, done := "the server's tools make plugins", "converted"
	if e.Listed {
		what, done = "the server's tools/list answer is", "listed"
	}
	return fmt.Sprintf("%s over the import's limit of %s: the total passed it at tool %q (%d %s); raise the limit",
		what, plugins.ImportLimitText(e.Max), e.Tool, e.Tools, done)
}
