package plugins

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/blindexec/blindexec/plugins/schema"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// compiled caches compiled parameter schemas by their bytes: runtime
// payloads carry the same plugins again and again. A map lookup with a
// string(bytes) key does not allocate and hashes far faster than sha256.
var compiled struct {
	sync.RWMutex
	m map[string]map[string]*compiledSchema // by variant, then the schema's bytes
}

const compiledCacheMax = 4096

// compiledSchema is a compiled parameter schema and, when its whole
// meaning is simple enough, the same rules for a quick check of valid
// arguments (simpleSchema).
type compiledSchema struct {
	*jsonschema.Schema
	simple *simpleSchema // nil: only the validator can tell
}

// parameterSchema compiles Parameters (draft 2020-12, with OpenAPI 3.0
// nullable turned into a type that admits null).
func (p *Plugin) parameterSchema() (*compiledSchema, error) {
	return compileParameters("", p.Parameters, nil)
}

// compileParameters compiles a parameter schema, after edit (when not nil)
// has changed its root; the result is cached under variant and the bytes.
func compileParameters(variant string, params json.RawMessage, edit func(root map[string]any)) (*compiledSchema, error) {
	compiled.RLock()
	c := compiled.m[variant][string(params)] // no key built: this runs on every call
	compiled.RUnlock()
	if c != nil {
		return c, nil
	}
	root, err := decodeParameters(params, edit)
	if err != nil {
		return nil, err
	}
	simple := simpleOf(root) // before compiling, which may rewrite root's parts
	s, err := compileDecoded(params, root)
	if err != nil {
		return nil, err
	}
	return cache(variant, params, s, simple), nil
}

// compileDecoded compiles root, decoded from params with nullable made a
// type, its repeated parts shared.
func compileDecoded(params json.RawMessage, root map[string]any) (*jsonschema.Schema, error) {
	b := newSharedBatch()
	b.addRoot(params, root)
	s, err := b.compile(root)
	if err != nil {
		// Said of the schema as written, not of its shared form.
		if _, err = compilePlain(root); err == nil {
			err = errors.New("its repeated parts could not be compiled apart") // a bug
		}
		return nil, fmt.Errorf("not a valid JSON Schema: %v", err)
	}
	return s, nil
}

// cache keeps s (and simple) as the compiled schema of params under
// variant, and returns the entry.
func cache(variant string, params json.RawMessage, s *jsonschema.Schema, simple *simpleSchema) *compiledSchema {
	c := &compiledSchema{Schema: s, simple: simple}
	compiled.Lock()
	defer compiled.Unlock()
	if compiled.m == nil {
		compiled.m = make(map[string]map[string]*compiledSchema)
	}
	if compiled.m[variant] == nil || len(compiled.m[variant]) >= compiledCacheMax {
		compiled.m[variant] = make(map[string]*compiledSchema)
	}
	compiled.m[variant][string(params)] = c
	return c
}

// nullableToType rewrites OpenAPI 3.0's `nullable: true` into a draft
// 2020-12 type that admits null, in every schema object of root (not in
// a property called nullable, nor in enum or default values), in place:
// the schema is one just decoded, and copying it doubled what decoding
// allocates.
func nullableToType(root map[string]any) {
	schema.Walk(root, func(t map[string]any) {
		nullable, ok := t["nullable"]
		if !ok {
			return
		}
		delete(t, "nullable")
		if nullable != true {
			return
		}
		switch typ := t["type"].(type) {
		case string:
			t["type"] = []any{typ, "null"}
		case []any:
			t["type"] = append(append([]any{}, typ...), "null")
		}
		if e, ok := t["enum"].([]any); ok {
			t["enum"] = append(append([]any{}, e...), nil)
		}
	})
}

var english = message.NewPrinter(language.English)

// ValidateArguments checks args against Parameters. Each error names the
// argument (a dotted path) and what was expected, phrased for an LLM to
// correct its call ("must be greater than 0"), without quoting the value.
func (p *Plugin) ValidateArguments(args map[string]any) []FieldError {
	s, err := p.parameterSchema()
	if err == nil && len(p.Execution.InputSchema) > 0 {
		s, err = writtenSchema(p.Execution.InputSchema) // the server's own, $refs and all
	}
	if err != nil {
		return []FieldError{{Field: "parameters", Message: err.Error()}}
	}
	if s.simple != nil && s.simple.valid(args) {
		return nil // what the validator would say, for a fifth of its cost
	}
	err = s.Validate(args)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Message: err.Error()}}
	}
	out := argumentErrors(ve)
	sort.Slice(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// LLMParameters is the schema the LLM sees: Parameters without the
// arguments bound by fixed_params (extra are those of the runtime payload),
// with oneOf shown as anyOf (schema.ForLLM).
func (p *Plugin) LLMParameters(extra map[string]any) json.RawMessage {
	oneOf := bytes.Contains(p.Parameters, []byte(`"oneOf"`))
	if len(p.FixedParams) == 0 && len(extra) == 0 && !oneOf {
		return p.Parameters
	}
	var doc map[string]any
	if json.Unmarshal(p.Parameters, &doc) != nil {
		return p.Parameters
	}
	hidden := func(name string) bool {
		_, a := p.FixedParams[name]
		_, b := extra[name]
		return a || b
	}
	if props, ok := doc["properties"].(map[string]any); ok {
		kept := make(map[string]any, len(props))
		for name, v := range props {
			if !hidden(name) {
				kept[name] = v
			}
		}
		doc["properties"] = kept
	}
	if req, ok := doc["required"].([]any); ok {
		kept := make([]any, 0, len(req))
		for _, r := range req {
			if s, _ := r.(string); !hidden(s) {
				kept = append(kept, r)
			}
		}
		doc["required"] = kept
	}
	if oneOf {
		doc = schema.ForLLM(doc).(map[string]any)
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return p.Parameters
	}
	return out
}

// Tool is the OpenAI function definition of a plugin: name, description
// and parameters only. Execution, auth and fixed params never leave the
// engine.
type Tool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is the function part of an OpenAI tool.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      bool            `json:"strict,omitempty"`
}

// Tool returns the plugin as the LLM sees it.
func (p *Plugin) Tool(fixed map[string]any) Tool {
	params := p.LLMParameters(fixed)
	if p.Strict {
		params = strictForm(params)
	}
	return Tool{Type: "function", Function: ToolFunction{
		Name:        p.Name,
		Description: strings.TrimSpace(p.Description),
		Parameters:  params,
		Strict:      p.Strict,
	}}
}

// strictForm converts parameters to OpenAI's strict mode with the shared
// resolver; the conversion is cached, as the same tools are bound again
// and again.
func strictForm(params json.RawMessage) json.RawMessage {
	strictCache.RLock()
	out, ok := strictCache.m[string(params)]
	strictCache.RUnlock()
	if ok {
		return out
	}
	var doc map[string]any
	if json.Unmarshal(params, &doc) != nil {
		return params
	}
	res, err := schema.Resolve(doc, nil, schema.Options{Strict: true, Direction: schema.Request})
	if err != nil {
		return params
	}
	if out, err = json.Marshal(res.Schema); err != nil {
		return params
	}
	strictCache.Lock()
	if strictCache.m == nil || len(strictCache.m) >= compiledCacheMax {
		strictCache.m = make(map[string]json.RawMessage)
	}
	strictCache.m[string(params)] = out
	strictCache.Unlock()
	return out
}

var strictCache struct {
	sync.RWMutex
	m map[string]json.RawMessage
}

// StripOmitted removes from args, in place, the nulls a strict-mode call
// sends for the optional arguments it means to leave out (see Strict).
// A plugin that is not strict keeps its arguments as they are.
func (p *Plugin) StripOmitted(args map[string]any) {
	if !p.Strict {
		return
	}
	var original map[string]any
	if json.Unmarshal(p.Parameters, &original) != nil {
		return
	}
	res, err := schema.Resolve(original, nil, schema.Options{Raw: true})
	if err != nil {
		return
	}
	stripped := schema.StripOmitted(args, res.Schema)
	for k := range args {
		if _, ok := stripped[k]; !ok {
			delete(args, k)
		} else {
			args[k] = stripped[k]
		}
	}
}
