package openapi

import (
	"maps"
	"strings"

	"github.com/blindexec/blindexec/plugins/schema"
)

// convertSwagger2 rewrites a Swagger 2.0 document into the OpenAPI 3.0
// shape the converter reads, in place: host, basePath and schemes become
// servers; securityDefinitions become components.securitySchemes; body and
// formData parameters become a requestBody; the other parameters get a
// schema, their collectionFormat a style. Schema references
// ("#/definitions/...") need no rewriting: they resolve in the same map.
func convertSwagger2(d *Document) {
	raw := d.Raw
	lookup := schema.OpenAPILookup(raw)
	if host, _ := raw["host"].(string); host != "" || raw["basePath"] != nil {
		base, _ := raw["basePath"].(string)
		schemes, _ := raw["schemes"].([]any)
		var servers []any
		for _, s := range schemes {
			if s, ok := s.(string); ok && host != "" {
				servers = append(servers, map[string]any{"url": s + "://" + host + base})
			}
		}
		if len(servers) == 0 {
			// Without schemes, the scheme (and without host, the host) is
			// the one the document was fetched from: a relative URL.
			u := base
			if host != "" {
				u = "//" + host + base
			}
			servers = append(servers, map[string]any{"url": u})
		}
		raw["servers"] = servers
	}
	comps := map[string]any{}
	if defs, ok := raw["securityDefinitions"].(map[string]any); ok {
		schemes := make(map[string]any, len(defs))
		for name, v := range defs {
			if def, ok := v.(map[string]any); ok {
				schemes[name] = securityScheme2(def)
			}
		}
		comps["securitySchemes"] = schemes
	}
	raw["components"] = comps

	consumes, _ := raw["consumes"].([]any)
	paths, _ := raw["paths"].(map[string]any)
	for _, p := range sortedKeys(paths) {
		item, ok := paths[p].(map[string]any)
		if !ok {
			continue
		}
		item = maps.Clone(item)
		paths[p] = item
		pathParams := derefList(lookup, item["parameters"])
		delete(item, "parameters")
		var shared []any
		for _, prm := range pathParams {
			if in, _ := prm["in"].(string); in != "body" && in != "formData" {
				shared = append(shared, parameter2(prm))
			}
		}
		if shared != nil {
			item["parameters"] = shared
		}
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			op = maps.Clone(op)
			item[m] = op
			opConsumes := consumes
			if c, ok := op["consumes"].([]any); ok {
				opConsumes = c
			}
			// Body and form parameters of the path item apply unless the
			// operation redefines them (by name and location); the others
			// stay on the path item, where the converter merges them.
			own := derefList(lookup, op["parameters"])
			all := own
			for _, prm := range pathParams {
				if !hasParam(own, prm) {
					all = append(all, prm)
				}
			}
			var out []any
			var body map[string]any
			form := map[string]any{}
			var formRequired []any
			for i, prm := range all {
				name, _ := prm["name"].(string)
				switch prm["in"] {
				case "body":
					body = prm
				case "formData":
					s := schema2(prm)
					if desc, ok := prm["description"]; ok {
						s["description"] = desc
					}
					form[name] = s
					if prm["required"] == true {
						formRequired = append(formRequired, name)
					}
				default:
					if i < len(own) {
						out = append(out, parameter2(prm))
					}
				}
			}
			op["parameters"] = out
			switch {
			case body != nil:
				ct := "application/json"
				if len(opConsumes) > 0 && !containsJSON(opConsumes) {
					ct, _ = opConsumes[0].(string)
				}
				op["requestBody"] = map[string]any{
					"required":    body["required"] == true,
					"description": body["description"],
					"content":     map[string]any{ct: map[string]any{"schema": body["schema"]}},
				}
			case len(form) > 0:
				ct := "application/x-www-form-urlencoded"
				for _, c := range opConsumes {
					if c == "multipart/form-data" {
						ct = "multipart/form-data"
					}
				}
				s := map[string]any{"type": "object", "properties": form}
				if formRequired != nil {
					s["required"] = formRequired
				}
				op["requestBody"] = map[string]any{
					"required": formRequired != nil,
					"content":  map[string]any{ct: map[string]any{"schema": s}},
				}
			}
		}
	}
}

// derefList dereferences a parameter list ("#/parameters/..." references
// resolve in the Swagger document itself), skipping broken entries: the
// converter reports those it meets again.
func derefList(lookup schema.Lookup, v any) []map[string]any {
	list, _ := v.([]any)
	out := make([]map[string]any, 0, len(list))
	for _, x := range list {
		if x, err := lookup.Deref(x); err == nil {
			if m, ok := x.(map[string]any); ok {
				out = append(out, m)
			}
		}
	}
	return out
}

func hasParam(list []map[string]any, p map[string]any) bool {
	for _, q := range list {
		if q["name"] == p["name"] && q["in"] == p["in"] {
			return true
		}
	}
	return false
}

func containsJSON(types []any) bool {
	for _, t := range types {
		if s, _ := t.(string); strings.Contains(s, "json") {
			return true
		}
	}
	return false
}

// parameter2 converts a non-body Swagger parameter.
func parameter2(p map[string]any) map[string]any {
	out := map[string]any{"name": p["name"], "in": p["in"], "schema": schema2(p)}
	for _, k := range []string{"description", "required"} {
		if v, ok := p[k]; ok {
			out[k] = v
		}
	}
	switch p["collectionFormat"] {
	case "multi":
		out["style"], out["explode"] = "form", true
	case "ssv":
		out["style"], out["explode"] = "spaceDelimited", false
	case "pipes":
		out["style"], out["explode"] = "pipeDelimited", false
	default: // csv, and tsv, which OpenAPI 3 cannot say
		if p["type"] == "array" {
			out["explode"] = false
			if p["in"] == "query" || p["in"] == "formData" {
				out["style"] = "form"
			}
		}
	}
	return out
}

// schema2 is the schema of a non-body parameter: its JSON Schema keywords.
func schema2(p map[string]any) map[string]any {
	s := map[string]any{}
	for _, k := range []string{"type", "format", "items", "enum", "default", "minimum", "maximum",
		"exclusiveMinimum", "exclusiveMaximum", "minLength", "maxLength", "pattern", "minItems", "maxItems", "multipleOf"} {
		if v, ok := p[k]; ok {
			s[k] = v
		}
	}
	if s["type"] == "file" {
		s["type"], s["format"] = "string", "binary"
	}
	return s
}

func securityScheme2(def map[string]any) map[string]any {
	switch def["type"] {
	case "basic":
		return map[string]any{"type": "http", "scheme": "basic"}
	case "oauth2":
		flow := map[string]any{"scopes": def["scopes"]}
		for _, k := range []string{"authorizationUrl", "tokenUrl"} {
			if v, ok := def[k]; ok {
				flow[k] = v
			}
		}
		// flow as a string: a document's object or list there, used as
		// a key of a map[any], panicked (unhashable).
		given, _ := def["flow"].(string)
		name := map[string]string{"application": "clientCredentials", "password": "password",
			"implicit": "implicit", "accessCode": "authorizationCode"}[given]
		if name == "" {
			name = "unknown"
		}
		return map[string]any{"type": "oauth2", "flows": map[string]any{name: flow}}
	}
	return def // apiKey is the same in both versions
}
