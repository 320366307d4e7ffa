package plugins

import (
	"encoding/json"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// argumentErrors turns a validation error of a call's arguments into one
// FieldError per problem, phrased as a person says it ("must be greater
// than 0"). The messages name schema values (bounds, allowed values,
// types) but never quote the argument's own value: they end up in
// execution records, which hold no argument values.
func argumentErrors(ve *jsonschema.ValidationError) []FieldError {
	var out []FieldError
	add := func(loc []string, msg string) {
		fe := FieldError{Field: dotted(loc), Message: msg}
		if fe.Field == "" {
			fe.Field = "(arguments)"
		}
		if !slices.Contains(out, fe) {
			out = append(out, fe)
		}
	}
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				add(append(slices.Clone(e.InstanceLocation), name), "is required")
			}
			return
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				add(append(slices.Clone(e.InstanceLocation), name), "is not a known property")
			}
			return
		case *kind.AnyOf, *kind.OneOf:
			add(e.InstanceLocation, alternatives(e))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		add(e.InstanceLocation, phrase(e.ErrorKind))
	}
	walk(ve)
	return out
}

// alternatives explains a value that matches none (or, for oneOf, more
// than one) of the alternatives, with what each alternative objected.
func alternatives(e *jsonschema.ValidationError) string {
	if k, ok := e.ErrorKind.(*kind.OneOf); ok && len(k.Subschemas) > 1 {
		return fmt.Sprintf("matches more than one of the allowed shapes (%d and %d): it must match exactly one", k.Subschemas[0]+1, k.Subschemas[1]+1)
	}
	var parts []string
	for i, c := range e.Causes {
		var msgs []string
		for _, fe := range argumentErrors(c) {
			rel := strings.TrimPrefix(strings.TrimPrefix(fe.Field, dotted(e.InstanceLocation)), ".")
			msgs = append(msgs, strings.TrimSpace(rel+" "+fe.Message))
		}
		parts = append(parts, fmt.Sprintf("%d: %s", i+1, strings.Join(msgs, ", ")))
	}
	if len(parts) == 0 {
		return "matches none of the allowed shapes"
	}
	return "matches none of the allowed shapes (" + strings.Join(parts, "; ") + ")"
}

// phrase says what one failed keyword wants.
func phrase(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Type:
		want := make([]string, len(k.Want))
		for i, t := range k.Want {
			want[i] = article(t)
		}
		return "must be " + strings.Join(want, " or ") + ", not " + article(k.Got)
	case *kind.Enum:
		vals := make([]string, len(k.Want))
		for i, v := range k.Want {
			vals[i] = literal(v)
		}
		if len(vals) == 1 {
			return "must be " + vals[0]
		}
		return "must be one of " + strings.Join(vals, ", ")
	case *kind.Const:
		return "must be " + literal(k.Want)
	case *kind.Minimum:
		return "must be at least " + number(k.Want)
	case *kind.ExclusiveMinimum:
		return "must be greater than " + number(k.Want)
	case *kind.Maximum:
		return "must be at most " + number(k.Want)
	case *kind.ExclusiveMaximum:
		return "must be less than " + number(k.Want)
	case *kind.MultipleOf:
		return "must be a multiple of " + number(k.Want)
	case *kind.MinLength:
		return fmt.Sprintf("must be at least %d characters long", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("must be at most %d characters long", k.Want)
	case *kind.MinItems:
		return fmt.Sprintf("must have at least %d items", k.Want)
	case *kind.MaxItems:
		return fmt.Sprintf("must have at most %d items", k.Want)
	case *kind.MinProperties:
		return fmt.Sprintf("must have at least %d properties", k.Want)
	case *kind.MaxProperties:
		return fmt.Sprintf("must have at most %d properties", k.Want)
	case *kind.UniqueItems:
		return fmt.Sprintf("must not repeat an item (items %d and %d are equal)", k.Duplicates[0], k.Duplicates[1])
	case *kind.Pattern:
		return "must match the pattern " + k.Want
	case *kind.Format:
		return "must be a valid " + k.Want
	case *kind.FalseSchema:
		return "is not allowed"
	case *kind.Not:
		return "is not allowed here"
	}
	return k.LocalizedString(english)
}

// article names a JSON type with its article: "a string", "an integer".
func article(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer", "object", "array":
		return "an " + t
	}
	return "a " + t
}

func literal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func number(r *big.Rat) string {
	if r.IsInt() {
		return r.Num().String()
	}
	f, _ := r.Float64()
	return fmt.Sprint(f)
}
