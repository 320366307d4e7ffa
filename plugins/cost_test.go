package plugins

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// manyProps is a parameters schema with n string properties.
func manyProps(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// laughs is a schema whose $defs each reference the previous twice: n
// levels expand to 2^n copies.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","$defs":{"d0":{"type":"string"}`)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `,"d%d":{"anyOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i-1, i-1)
	}
	fmt.Fprintf(&b, `},"properties":{"x":{"$ref":"#/$defs/d%d"}}}`, n)
	return b.String()
}

// refText is a schema of n properties that $ref one definition holding a
// description of size bytes: small as written, n times the text expanded.
func refText(n, size int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"object","$defs":{"d":{"type":"string","description":"%s"}},"properties":{`, strings.Repeat("d", size))
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"$ref":"#/$defs/d"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// Issue 13, point 2: a schema over a limit is refused naming it; ordinary
// schemas (cycles included) pass.
func TestCheckSchemaCost(t *testing.T) {
	l := DefaultSchemaLimits
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 70) + `{}` + strings.Repeat(`}`, 70) + `}}`
	for _, tc := range []struct {
		name, schema, limit string
	}{
		{"small", `{"type":"object","properties":{"q":{"type":"string"}}}`, ""},
		{"at the property limit", manyProps(l.Properties), ""},
		{"40,000 properties", manyProps(40_000), LimitBytes},
		{"past the property limit", manyProps(l.Properties + 1), LimitProperties},
		{"bytes", `{"type":"object","description":"` + strings.Repeat("x", l.Bytes) + `"}`, LimitBytes},
		{"deep", deep, LimitDepth},
		{"a cycle", `{"type":"object","$defs":{"n":{"type":"object","properties":{"c":{"$ref":"#/$defs/n"}}}},"properties":{"root":{"$ref":"#/$defs/n"}}}`, ""},
		{"self reference", `{"type":"object","properties":{"me":{"$ref":"#"}}}`, ""},
		{"a few levels of laughs", laughs(5), ""},
		{"billion laughs", laughs(30), LimitRefExpansions},
		{"nodes", `{"type":"object","anyOf":[` + strings.Repeat(`{},`, l.Nodes) + `{}]}`, LimitNodes},
		{"a property named $ref", `{"type":"object","properties":{"$ref":{"type":"string"}}}`, ""},
		{"a long text $ref'd by many", refText(1000, 900<<10), LimitBytes},
		{"a long text $ref'd once", refText(1, 600<<10), ""},
		{"a long text $ref'd by a few", refText(3, 300<<10), ""},
	} {
		err := CheckSchemaCost([]byte(tc.schema))
		var ce *CostError
		switch {
		case tc.limit == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.limit != "" && (!errors.As(err, &ce) || ce.Limit != tc.limit):
			t.Errorf("%s: %v, want the %s limit", tc.name, err, tc.limit)
		case tc.limit != "" && !strings.Contains(err.Error(), "limit of"):
			t.Errorf("%s: %q does not name the limit", tc.name, err)
		}
	}
}

// An inline plugin over a limit is a validation error of parameters
// naming the limit, before any compiling.
func TestParseJSONSchemaCost(t *testing.T) {
	doc := `{"name":"big","description":"d","parameters":` + manyProps(DefaultSchemaLimits.Properties+1) +
		`,"execution":{"method":"GET","base_url":"https://api.example.com/x"}}`
	_, err := ParseJSON(json.RawMessage(doc))
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Fields) != 1 || ve.Fields[0].Field != "parameters" ||
		!strings.Contains(ve.Fields[0].Message, "limit of 2000 properties") {
		t.Fatalf("ParseJSON = %v, want parameters over the properties limit", err)
	}
	compiled.RLock()
	_, cached := compiled.m[manyProps(DefaultSchemaLimits.Properties+1)]
	compiled.RUnlock()
	if cached {
		t.Error("the refused schema was compiled")
	}
}
