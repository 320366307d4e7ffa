package openapi

import (
	"reflect"
	"strings"

	"github.com/blindexec/blindexec/plugins/schema"
)

// responseWords are the property names of an operation's first success
// response (2xx, by code) that has a schema: what a caller gets back.
func (c *converter) responseWords(op map[string]any) []string {
	responses, _ := op["responses"].(map[string]any)
	for _, code := range sortedKeys(responses) {
		if !strings.HasPrefix(code, "2") {
			continue
		}
		r, err := c.lookup.Deref(responses[code])
		m, _ := r.(map[string]any)
		if err != nil || m == nil {
			continue
		}
		s := m["schema"] // Swagger 2
		if content, ok := m["content"].(map[string]any); ok {
			media, _ := content[PickMediaType(content)].(map[string]any)
			s = media["schema"]
		}
		if s != nil {
			return c.propertyNames(s)
		}
	}
	return nil
}

// propertyNames is schema.PropertyNames of s, once for each schema that
// operations share: it reads every name of the schema's first levels
// (a response of 100,000 properties that 200 operations return took 7 s).
// A reference is known by its target's name (PropertyNames reads nothing
// beside it), any other schema by its map, the document's, alive as long
// as c.
func (c *converter) propertyNames(s any) []string {
	m, ok := s.(map[string]any)
	if !ok || len(m) == 0 {
		return schema.PropertyNames(s, c.lookup)
	}
	var key any = reflect.ValueOf(m).UnsafePointer()
	if ref, ok := m["$ref"].(string); ok {
		key = ref
	}
	if words, ok := c.words[key]; ok {
		return words
	}
	words := schema.PropertyNames(s, c.lookup)
	if c.words == nil {
		c.words = map[any][]string{}
	}
	c.words[key] = words
	return words
}
