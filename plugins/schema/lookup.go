package schema

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Lookup returns the value a $ref points at, and whether it exists.
// It is the one thing that differs between OpenAPI documents and the JSON
// Schemas of MCP tools; the resolver itself is shared.
type Lookup func(ref string) (any, bool)

// OpenAPILookup resolves local references ("#/components/schemas/Pet",
// "#/components/parameters/limit", "#/paths/~1pets/get/requestBody", ...)
// as JSON pointers into the decoded OpenAPI (or Swagger) document doc.
// References to other files are not resolved.
func OpenAPILookup(doc map[string]any) Lookup {
	return func(ref string) (any, bool) {
		frag, ok := strings.CutPrefix(ref, "#")
		if !ok {
			return nil, false
		}
		return pointer(doc, frag)
	}
}

// JSONSchemaLookup resolves references inside the JSON Schema root, such as
// the inputSchema of an MCP tool: "#" (the root itself), "#/$defs/Name",
// "#/definitions/Name" and any other "#/..." pointer. A reference whose
// absolute part equals the root's "$id" is treated as local.
func JSONSchemaLookup(root map[string]any) Lookup {
	id, _ := root["$id"].(string)
	id, _, _ = strings.Cut(id, "#")
	return func(ref string) (any, bool) {
		base, frag, ok := strings.Cut(ref, "#")
		if base != "" && base != id {
			return nil, false
		}
		if !ok && base == "" {
			return nil, false
		}
		return pointer(root, frag)
	}
}

// Deref follows a chain of {"$ref": ...} objects starting at v, as needed for
// OpenAPI objects that are not schemas (parameters, request bodies,
// responses), and returns the first value that is not a reference.
func (l Lookup) Deref(v any) (any, error) {
	// A chain longer than this is a cycle in any document worth reading.
	const maxChain = 32
	for i := 0; ; i++ {
		m, _ := v.(map[string]any)
		ref, ok := m["$ref"].(string)
		if !ok {
			return v, nil
		}
		if i == maxChain {
			return nil, &RefError{Ref: ref, Cyclic: true}
		}
		if v, ok = l(ref); !ok {
			return nil, &RefError{Ref: ref}
		}
	}
}

// RefError reports a reference that cannot be resolved.
type RefError struct {
	Ref    string
	Cyclic bool // the reference is part of a chain of references that never ends
}

func (e *RefError) Error() string {
	if e.Cyclic {
		return fmt.Sprintf("schema: reference %q is part of a reference cycle", e.Ref)
	}
	return fmt.Sprintf("schema: unresolvable reference %q", e.Ref)
}

var pointerUnescaper = strings.NewReplacer("~1", "/", "~0", "~")

// pointer evaluates the URI fragment frag (without "#") as a JSON pointer
// (RFC 6901, with the percent-decoding of its section 6) into root.
func pointer(root any, frag string) (any, bool) {
	if strings.Contains(frag, "%") {
		s, err := url.PathUnescape(frag)
		if err != nil {
			return nil, false
		}
		frag = s
	}
	if frag == "" {
		return root, true
	}
	rest, ok := strings.CutPrefix(frag, "/")
	if !ok {
		return nil, false // plain-name fragments ($anchor) are not supported
	}
	cur := root
	for tok := range strings.SplitSeq(rest, "/") {
		if strings.Contains(tok, "~") {
			tok = pointerUnescaper.Replace(tok)
		}
		switch c := cur.(type) {
		case map[string]any:
			if cur, ok = c[tok]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}
