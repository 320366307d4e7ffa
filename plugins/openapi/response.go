package openapi

import (
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
			return schema.PropertyNames(s, c.lookup)
		}
	}
	return nil
}
