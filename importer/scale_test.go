package importer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"

	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// graphLike writes an OpenAPI document of ops operations shaped like
// Microsoft Graph's: entity types that extend a base type (allOf), say
// who created and changed them (an identity set, the same component in
// every entity) and hold the entity type before them (a navigation
// property, nullable), with four operations that send
// one in their body. An operation's body is its entity expanded with all
// it holds, so later operations have larger and deeper schemas, as in
// Graph (its first 1,000 operations average 9 kB of parameters, its first
// 8,000 20 kB). The first n operations of graphLike(m) are graphLike(n).
func graphLike(ops int) []byte {
	str := func(d string) map[string]any {
		return map[string]any{"type": "string", "nullable": true, "description": d}
	}
	ref := func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	schemas := map[string]any{
		"entity": map[string]any{"type": "object", "properties": map[string]any{
			"id": map[string]any{"type": "string", "description": "The identifier, read only.", "readOnly": true},
		}},
		"identity": map[string]any{"type": "object", "properties": map[string]any{
			"id": str("Unique identifier for the identity."), "displayName": str("The display name of the identity."),
			"tenantId": str("The tenant of the identity."), "email": map[string]any{"type": "string", "format": "email", "nullable": true},
		}},
		"identitySet": map[string]any{"type": "object", "properties": map[string]any{
			"user":        map[string]any{"anyOf": []any{ref("identity"), map[string]any{"type": "object", "nullable": true}}},
			"application": map[string]any{"anyOf": []any{ref("identity"), map[string]any{"type": "object", "nullable": true}}},
			"device":      map[string]any{"anyOf": []any{ref("identity"), map[string]any{"type": "object", "nullable": true}}},
		}},
	}
	paths := map[string]any{}
	for j := range ops / 4 {
		own := map[string]any{
			"displayName":          str(fmt.Sprintf("The name of the type %d entity.", j)),
			"description":          str("What it is for."),
			"createdDateTime":      map[string]any{"type": "string", "format": "date-time", "nullable": true},
			"lastModifiedDateTime": map[string]any{"type": "string", "format": "date-time", "nullable": true},
			"status":               map[string]any{"type": "string", "enum": []any{"active", "inactive", fmt.Sprintf("kind%d", j)}},
			"size":                 map[string]any{"type": "integer", "format": "int64", "minimum": 0},
			"tags":                 map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"createdBy":            ref("identitySet"),
			"lastModifiedBy":       ref("identitySet"),
		}
		if j > 0 {
			own["previous"] = map[string]any{"allOf": []any{ref(fmt.Sprintf("t%d", j-1))}, "nullable": true, "description": "The type before it."}
		}
		schemas[fmt.Sprintf("t%d", j)] = map[string]any{"allOf": []any{
			ref("entity"), map[string]any{"type": "object", "title": fmt.Sprintf("t%d", j), "properties": own},
		}}
		body := map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{
			"schema": ref(fmt.Sprintf("t%d", j))}}}
		op := func(id string) map[string]any {
			return map[string]any{"operationId": id, "requestBody": body, "responses": map[string]any{"204": map[string]any{"description": "Success"}}}
		}
		id := map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}
		paths[fmt.Sprintf("/t%03d", j)] = map[string]any{"post": op(fmt.Sprintf("t%d_Create", j))}
		paths[fmt.Sprintf("/t%03d/{id}", j)] = map[string]any{"parameters": []any{id},
			"put": op(fmt.Sprintf("t%d_Set", j)), "patch": op(fmt.Sprintf("t%d_Update", j))}
		paths[fmt.Sprintf("/t%03d/{id}/copy", j)] = map[string]any{"parameters": []any{id}, "post": op(fmt.Sprintf("t%d_Copy", j))}
	}
	b, err := json.Marshal(map[string]any{
		"openapi": "3.0.1", "info": map[string]any{"title": "Graph-like", "version": "1"},
		"servers": []any{map[string]any{"url": "https://api.example.com/v1"}},
		"paths":   paths, "components": map[string]any{"schemas": schemas},
	})
	if err != nil {
		panic(err)
	}
	return b
}

// importWork imports doc as `blindexec import openapi --dry-run` does and
// returns the operations, the bytes of their parameter schemas and the
// allocations the import made.
func importWork(t *testing.T, st *store.Store, data []byte) (ops, bytes int, allocs uint64) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	doc, err := openapi.Load(data, "graph-like.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := importer.OpenAPI(context.Background(), st, "graph-like.json", doc, openapi.Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if len(res.Failed) > 0 {
		t.Fatalf("failed: %v", res.Failed)
	}
	for _, op := range res.Operations {
		bytes += len(op.Plugin.Parameters)
	}
	return len(res.Operations), bytes, after.Mallocs - before.Mallocs
}

// TestImportLinear imports the first 16 and the first 128 operations of a
// Graph-like document and fails when the import's allocations per kB of
// parameter schema it writes grow at all, or pass 20. Per
// kB, not per operation: later operations have larger schemas (as Graph's do), so
// allocations per operation grow in any import; per kB they stay flat in
// an import whose work grows with what it writes. Compiling each plugin's
// schema for Validate made them grow with the schema's depth and
// repetition (issue 32).
func TestImportLinear(t *testing.T) {
	st := testdb.Open(t, "sqlite")
	importWork(t, st, graphLike(4)) // once-only work: the metaschema, the store's statements
	const n = 16
	ops1, kb1, a1 := importWork(t, st, graphLike(n))
	ops8, kb8, a8 := importWork(t, st, graphLike(8*n))
	per1, per8 := float64(a1)/float64(kb1>>10), float64(a8)/float64(kb8>>10)
	t.Logf("%d operations: %d kB of parameters, %d allocations (%d per operation, %.0f per kB)", ops1, kb1>>10, a1, a1/uint64(ops1), per1)
	t.Logf("%d operations: %d kB of parameters, %d allocations (%d per operation, %.0f per kB)", ops8, kb8>>10, a8, a8/uint64(ops8), per8)
	if ops1 != n || ops8 != 8*n {
		t.Fatalf("imported %d and %d operations, want %d and %d", ops1, ops8, n, 8*n)
	}
	if per8 > per1 {
		t.Errorf("allocations per kB grew %.2f× from %d to %d operations (want none)", per8/per1, n, 8*n)
	}
	// Issue 32 left 824 and 694; proving the schemas instead of compiling
	// them made it 232 and 195, encoding them without reflection 102 and
	// 76 (issue 50). The navigation property no longer nests its entity
	// in an object of its own (its expansion was deeper than an inline
	// plugin's 64 levels; Graph's deepest is 57): 112 and 91; expanding
	// each component once for all operations, 41 and 16.
	if per8 > 20 {
		t.Errorf("%.0f allocations per kB of parameters at %d operations, want at most 20", per8, 8*n)
	}
}
