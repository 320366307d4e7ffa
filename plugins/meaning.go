package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"
)

// validateMeaning checks what a document means, beyond its shape: every
// base_url template is filled by a parameter, the fixed params fit the
// parameter schema, and every required credential of an HTTP plugin is
// read by its auth config. (Those of an MCP plugin are read by the
// registered server's auth config: the store checks them, see
// catalog.CheckPlugin.) Each of these passes a shape check and then fails
// every call, far from the write that caused it.
func (p *Plugin) validateMeaning(add func(field, format string, args ...any)) {
	if p.ExecType() == TypeHTTP {
		p.validateTemplates(add)
		for i, k := range p.RequiredCredentials {
			if read := p.AuthConfig.CredentialKeys(); !slices.Contains(read, k) {
				add(fmt.Sprintf("required_credentials[%d]", i), "%q is read by nothing: auth_config %s", k, describeKeys(read))
			}
		}
	}
	if len(p.FixedParams) > 0 {
		for _, fe := range p.fixedParamErrors() {
			field := "fixed_params"
			if fe.Field != "(arguments)" && fe.Field != "" {
				field += "." + fe.Field
			}
			add(field, "%s", fe.Message)
		}
	}
}

// describeKeys says which credential keys an auth config reads.
func describeKeys(keys []string) string {
	if len(keys) == 0 {
		return "reads no credential (add a mapping, token, username/password or oauth2 field that names it)"
	}
	return "reads only " + strings.Join(keys, ", ")
}

// validateTemplates checks that each {name} of base_url is a parameter or
// a fixed param, by its own name or the wire name param_placement gives it.
func (p *Plugin) validateTemplates(add func(field, format string, args ...any)) {
	e := &p.Execution
	templates := TemplateNames(e.BaseURL)
	if len(templates) == 0 {
		return // most base URLs: the parameters need not be read again
	}
	names, ok := propertyNames(p.Parameters)
	if !ok {
		return // reported by the parameters check
	}
	for _, n := range templates {
		filled := false
		for _, name := range names {
			filled = filled || name == n || wireName(name, e.ParamPlacement.Args[name]) == n
		}
		for name := range p.FixedParams {
			filled = filled || name == n || wireName(name, e.ParamPlacement.Args[name]) == n
		}
		if !filled {
			add("execution.base_url", "the template {%s} names no parameter: add %q to parameters.properties (or map one to it with param_placement {\"in\": \"path\", \"name\": %q})", n, n, n)
		}
	}
}

// propertyNames are the names in the top-level "properties" of params, a
// JSON object (checked before), as decoding it into a struct with that
// field reads them (the key's case ignored, the last one kept), without
// decoding the rest: Microsoft Graph's parameters are 200 MB, and
// encoding/json scanned them all again for these names. ok is false where
// that decoding fails; several "properties" add up, as they do there.
func propertyNames(params []byte) (names []string, ok bool) {
	ok = true
	gjson.ParseBytes(params).ForEach(func(k, v gjson.Result) bool {
		if !strings.EqualFold(k.String(), "properties") {
			return true
		}
		switch v.Type {
		case gjson.Null:
			names = nil
		case gjson.JSON:
			if !v.IsObject() {
				ok = false
				return false
			}
			v.ForEach(func(name, _ gjson.Result) bool {
				names = append(names, name.String())
				return true
			})
		default:
			ok = false
			return false
		}
		return true
	})
	return names, ok
}

// fixedParamErrors validates the fixed params against the parameter schema
// without its top-level "required": they are some of the arguments, and
// the LLM supplies the rest.
func (p *Plugin) fixedParamErrors() []FieldError {
	s, err := compileParameters("fixed\x00", p.Parameters, func(root map[string]any) { delete(root, "required") })
	if err != nil {
		return nil // reported by the parameters check
	}
	err = s.Validate(jsonValue(p.FixedParams))
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []FieldError{{Message: err.Error()}}
	}
	return argumentErrors(ve)
}

// jsonValue is v as encoding/json would decode it (numbers as float64,
// json.Number as a number), which the validator understands.
func jsonValue(v map[string]any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}
