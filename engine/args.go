package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/blindexec/blindexec/internal/jsonlimit"
	"github.com/blindexec/blindexec/plugins"
)

// ArgumentLimits bound the arguments of every call, wherever they come from
// (/v1/execute, /v1/tools/{name}/call, the proxy, /mcp, the LLM loop):
// arguments nested deeper or holding more elements are refused, naming
// the limit, before they are decoded. Decoding costs time in proportion
// to both (quadratic in the depth, for gjson), and no tool's parameters
// need more.
var ArgumentLimits = jsonlimit.Limits{Depth: 64, Elements: 100_000}

// schemaInfo is what the engine needs from a plugin's parameters beyond
// validation, derived once per distinct schema.
type schemaInfo struct {
	props map[string]propInfo
	// extras: additionalProperties or patternProperties are given (and not
	// false), so undeclared arguments are sent; without them an undeclared
	// argument is an error.
	extras bool
}

// propInfo says how a multipart field is sent: as a file part when its
// schema, or that of its items (a list of files, one part each), says
// format binary, or base64 content (format byte or contentEncoding base64).
type propInfo struct {
	binary bool // a file in multipart
	base64 bool // the value is base64 of the bytes to send
}

// fieldSchema is the part of a property schema propInfo reads.
type fieldSchema struct {
	Format          string `json:"format"`
	ContentEncoding string `json:"contentEncoding"`
}

func (f fieldSchema) info() propInfo {
	return propInfo{
		binary: f.Format == "binary",
		base64: f.ContentEncoding == "base64" || f.Format == "byte",
	}
}

// schemas caches schemaInfo by the schema's bytes: catalog plugins and
// payload plugins alike repeat the same few schemas.
var schemas struct {
	sync.RWMutex
	m map[string]*schemaInfo
}

const schemasMax = 4096

func schemaOf(p *plugins.Plugin) (*schemaInfo, error) {
	params := p.Parameters
	schemas.RLock()
	info := schemas.m[string(params)]
	schemas.RUnlock()
	if info != nil {
		return info, nil
	}
	var doc struct {
		Properties map[string]struct {
			fieldSchema
			Items fieldSchema `json:"items"`
		} `json:"properties"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
		PatternProperties    json.RawMessage `json:"patternProperties"`
	}
	if err := json.Unmarshal(params, &doc); err != nil {
		return nil, err
	}
	info = &schemaInfo{
		props:  make(map[string]propInfo, len(doc.Properties)),
		extras: len(doc.PatternProperties) > 0 || (len(doc.AdditionalProperties) > 0 && string(bytes.TrimSpace(doc.AdditionalProperties)) != "false"),
	}
	for name, p := range doc.Properties {
		pi, items := p.info(), p.Items.info()
		info.props[name] = propInfo{binary: pi.binary || items.binary, base64: pi.base64 || items.base64}
	}
	schemas.Lock()
	if schemas.m == nil || len(schemas.m) >= schemasMax {
		schemas.m = make(map[string]*schemaInfo)
	}
	schemas.m[string(params)] = info
	schemas.Unlock()
	return info, nil
}

// decodeArguments decodes the LLM's arguments: a JSON object (nothing or
// null count as {}). Numbers become json.Number so that large integer ids
// reach the API unchanged. gjson does the work: on this hot path it is
// several times faster than encoding/json's Decoder with UseNumber.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("the field arguments must be a JSON object, or a string holding one; got %s", jsonKind(raw))
	}
	if err := jsonlimit.Check(raw, ArgumentLimits); err != nil {
		return nil, err
	}
	if !gjson.ValidBytes(raw) {
		// encoding/json says best what is wrong.
		msg := "not valid JSON"
		if err := json.Unmarshal(raw, new(any)); err != nil {
			msg = err.Error()
		}
		return nil, fmt.Errorf("the arguments are not valid JSON: %s", msg)
	}
	return jsonValue(gjson.ParseBytes(raw)).(map[string]any), nil
}

// jsonValue is r as encoding/json would decode it with UseNumber.
func jsonValue(r gjson.Result) any {
	switch r.Type {
	case gjson.String:
		return r.Str
	case gjson.Number:
		return json.Number(r.Raw)
	case gjson.True:
		return true
	case gjson.False:
		return false
	case gjson.Null:
		return nil
	}
	if r.IsArray() {
		a := []any{}
		r.ForEach(func(_, v gjson.Result) bool {
			a = append(a, jsonValue(v))
			return true
		})
		return a
	}
	m := map[string]any{}
	r.ForEach(func(k, v gjson.Result) bool {
		m[k.Str] = jsonValue(v)
		return true
	})
	return m
}

// jsonKind names what b is, never quoting it: arguments may hold a
// secret.
func jsonKind(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "a JSON object"
	case '[':
		return "an array"
	case '"':
		var s string
		if json.Unmarshal(b, &s) != nil {
			return "a string that is not valid JSON"
		}
		return "a string holding " + jsonKind([]byte(s))
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "text that is not JSON"
}
