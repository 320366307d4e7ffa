package plugins

import "encoding/json"

// simpleSchema is a parameter schema whose whole meaning is a few
// properties of one scalar type each, which of them are required, and
// whether others are allowed: the usual tool's. Arguments it finds valid
// are valid to the validator too, and skip it (whose check allocated a
// call's validator state every call); anything else (an argument it finds
// invalid, a value it cannot judge) goes to the validator, whose verdict
// and errors are the ones said. It never finds an invalid call valid:
// FuzzSimpleSchema holds it to the validator.
type simpleSchema struct {
	props    map[string]string // name: "string", "boolean", "number" or "integer"
	required []string
	closed   bool // additionalProperties: false
}

// simpleOf is root as a simpleSchema, or nil when root says anything more
// (any keyword but those below, $schema included: a dialect may read the
// same keyword otherwise).
func simpleOf(root map[string]any) *simpleSchema {
	s := &simpleSchema{props: map[string]string{}}
	for k, v := range root {
		switch k {
		case "type", "title", "description": // "object", as decodeParameters checked; annotations
		case "properties":
			props, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			for name, sub := range props {
				t := scalarType(sub)
				if t == "" {
					return nil
				}
				s.props[name] = t
			}
		case "required":
			names, ok := v.([]any)
			if !ok {
				return nil
			}
			for _, n := range names {
				name, ok := n.(string)
				if !ok {
					return nil
				}
				s.required = append(s.required, name)
			}
		case "additionalProperties":
			allowed, ok := v.(bool)
			if !ok {
				return nil
			}
			s.closed = !allowed
		default:
			return nil
		}
	}
	return s
}

// scalarType is the type of a property's schema that says only its type
// (one of four scalars) and annotations, else "".
func scalarType(v any) string {
	sub, ok := v.(map[string]any)
	if !ok {
		return ""
	}
	var t string
	for k, x := range sub {
		switch k {
		case "type":
			t, _ = x.(string)
			switch t {
			case "string", "boolean", "number", "integer":
			default:
				return ""
			}
		case "title", "description", "default", "examples": // annotations
		default:
			return ""
		}
	}
	return t
}

// valid reports whether args are valid to s for sure: false means the
// validator must tell.
func (s *simpleSchema) valid(args map[string]any) bool {
	for _, name := range s.required {
		if _, ok := args[name]; !ok {
			return false
		}
	}
	for name, v := range args {
		t, declared := s.props[name]
		if !declared {
			if s.closed {
				return false
			}
			continue
		}
		if !isScalar(v, t) {
			return false
		}
	}
	return true
}

// isScalar reports whether v, as arguments are decoded (numbers as
// json.Number), is of the JSON Schema type t. A number is an integer here
// only as digits alone: 1.0 is one too, and is the validator's to judge.
func isScalar(v any, t string) bool {
	switch v := v.(type) {
	case string:
		return t == "string"
	case bool:
		return t == "boolean"
	case json.Number:
		integer, ok := numberSyntax(string(v))
		return ok && (t == "number" || t == "integer" && integer)
	}
	return false
}

// numberSyntax reports whether n is a JSON number (RFC 8259 §6) and
// whether it is written as an integer (no fraction, no exponent).
func numberSyntax(n string) (integer, ok bool) {
	i := 0
	if i < len(n) && n[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(n) && '0' <= n[i] && n[i] <= '9' {
			i++
		}
		return i - start
	}
	switch {
	case i < len(n) && n[i] == '0':
		i++
	case digits() == 0:
		return false, false
	}
	integer = i == len(n)
	if i < len(n) && n[i] == '.' {
		i++
		if digits() == 0 {
			return false, false
		}
	}
	if i < len(n) && (n[i] == 'e' || n[i] == 'E') {
		i++
		if i < len(n) && (n[i] == '+' || n[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false, false
		}
	}
	return integer, i == len(n)
}
