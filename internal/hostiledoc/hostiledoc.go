// Package hostiledoc writes the hostile OpenAPI documents that the
// importer's tests and the bench's hostile group import: small documents
// that would make far more than they hold.
package hostiledoc

import (
	"encoding/json"
	"fmt"
	"strings"
)

// SharedBody is the attacker review's document: ops operations that all
// send one request body, a component of props string properties with
// long names (some 230 bytes each). 2,000 operations of 3,000 properties
// are 1 MB of document, and made 2,000 plugins of 3,000 properties each
// (33 s) before the import's limits.
func SharedBody(ops, props int) []byte {
	return sharedBody(ops, props, "property_%04d_"+strings.Repeat("long_name_", 20))
}

// ShortFields is SharedBody with short property names (f0000): a plugin
// of 1,999 fields encodes to some 52 kB, while converting it holds some
// 300 bytes a field, so what an import holds outgrows what it counts.
func ShortFields(ops, props int) []byte {
	return sharedBody(ops, props, "f%04d")
}

// sharedBody writes SharedBody's document, its properties named by the
// format name of their index.
func sharedBody(ops, props int, name string) []byte {
	p := make(map[string]any, props)
	for i := range props {
		p[fmt.Sprintf(name, i)] = map[string]any{"type": "string"}
	}
	paths := make(map[string]any, ops)
	for i := range ops {
		paths[fmt.Sprintf("/o%04d", i)] = map[string]any{"post": map[string]any{"operationId": fmt.Sprintf("op%d", i),
			"requestBody": map[string]any{"content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"$ref": "#/components/schemas/Body"}}}},
			"responses": map[string]any{"204": map[string]any{"description": "done"}}}}
	}
	b, err := json.Marshal(map[string]any{"openapi": "3.0.3", "info": map[string]any{"title": "Hostile", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com"}}, "paths": paths,
		"components": map[string]any{"schemas": map[string]any{"Body": map[string]any{"type": "object", "properties": p}}}})
	if err != nil {
		panic(err) // maps of strings always encode
	}
	return b
}
