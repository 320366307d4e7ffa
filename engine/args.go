package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
)

// schemaInfo is what the engine needs from a plugin's parameters beyond
// validation, derived once per distinct schema.
type schemaInfo struct {
	props       map[string]propInfo
	extras      bool // additionalProperties or patternProperties admit undeclared arguments
	hasDefaults bool // some property may have a default (ApplyDefaults is worth its cost)
}

type propInfo struct {
	binary bool // format: binary (a file in multipart)
	base64 bool // contentEncoding: base64 or format: byte: the value is base64 of the bytes to send
}

// schemas caches schemaInfo by the schema's bytes: catalog plugins and
// payload plugins alike repeat the same few schemas.
var schemas struct {
	sync.RWMutex
	m map[string]*schemaInfo
}

const schemasMax = 4096

func schemaOf(params json.RawMessage) (*schemaInfo, error) {
	schemas.RLock()
	info := schemas.m[string(params)]
	schemas.RUnlock()
	if info != nil {
		return info, nil
	}
	var doc struct {
		Properties map[string]struct {
			Format          string `json:"format"`
			ContentEncoding string `json:"contentEncoding"`
		} `json:"properties"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
		PatternProperties    json.RawMessage `json:"patternProperties"`
	}
	if err := json.Unmarshal(params, &doc); err != nil {
		return nil, err
	}
	info = &schemaInfo{
		props:       make(map[string]propInfo, len(doc.Properties)),
		extras:      len(doc.PatternProperties) > 0 || (len(doc.AdditionalProperties) > 0 && string(bytes.TrimSpace(doc.AdditionalProperties)) != "false"),
		hasDefaults: bytes.Contains(params, []byte(`"default"`)),
	}
	for name, p := range doc.Properties {
		info.props[name] = propInfo{
			binary: p.Format == "binary",
			base64: p.ContentEncoding == "base64" || p.Format == "byte",
		}
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
// null count as {}). Numbers stay json.Number so that large integer ids
// reach the API unchanged.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	if raw[0] != '{' {
		return nil, fmt.Errorf("the arguments must be a JSON object, got %s", jsonKind(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var args map[string]any
	if err := dec.Decode(&args); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the arguments are not valid JSON: text after the object")
	}
	return args, nil
}

func jsonKind(b []byte) string {
	switch b[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return "a number"
	}
	return "something that is not JSON"
}
