package plugins

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"regexp"
	"slices"
	"strconv"
)

// Compiling a parameter schema (santhosh-tekuri/jsonschema/v6) checks it
// against the draft 2020-12 metaschema, part by part, every time: an
// import of Microsoft Graph compiled 200 MB of schemas made of a few
// thousand distinct parts, and spent three times the rest of the import
// doing it. An import need not compile them, only know they compile: a
// proof reads a schema's bytes, skips every part (by its bytes) already
// proven in the same import, and holds the rest to a subset of the
// metaschema that the compiler always accepts. What it cannot prove
// (a keyword outside the subset, a $ref, an escaped keyword, a number it
// would have to parse to judge) is compiled as before, which says why it
// fails. The compiled schema is made on the plugin's first call.

// proof proves parameter schemas valid, remembering the parts it has
// proven. Not safe for concurrent use.
type proof struct {
	seeds    [2]maphash.Seed
	known    map[[2]uint64]uint8 // a part's bytes → provenSchema|provenRoot
	patterns map[string]bool     // pattern → compiles
	ends     []int32             // by offset of a '{' or '[': the offset after its match
	data     []byte
}

const (
	provenSchema = 1 << iota // the bytes are a valid subschema
	provenRoot               // and a valid parameter schema
)

func newProof() *proof {
	return &proof{
		seeds:    [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()},
		known:    map[[2]uint64]uint8{},
		patterns: map[string]bool{},
	}
}

// maxProofDepth bounds the nesting a proof follows; deeper schemas are
// compiled (whose own limits then apply).
const maxProofDepth = 512

// proves reports whether params certainly compiles as compileParameters
// compiles it (a JSON object of "type": "object", valid under draft
// 2020-12 once OpenAPI 3.0's nullable is made a type). False says only
// that it was not proven.
func (pr *proof) proves(params []byte) bool {
	start := skipSpace(params, 0)
	if start == len(params) || params[start] != '{' {
		return false
	}
	key := pr.key(params)
	if pr.known[key]&provenRoot != 0 {
		return true
	}
	if !pr.match(params) {
		return false
	}
	pr.data = params
	defer func() { pr.data = nil }()
	end, ok := pr.schema(start, 0, true)
	if !ok || skipSpace(params, end) != len(params) {
		return false
	}
	pr.known[key] |= provenRoot | provenSchema
	return true
}

func (pr *proof) key(b []byte) [2]uint64 {
	return [2]uint64{maphash.Bytes(pr.seeds[0], b), maphash.Bytes(pr.seeds[1], b)}
}

// match fills ends for data's brackets (outside strings); false if they
// do not pair up or a string does not end. It checks nothing else: the
// parts read later are checked as they are read, the parts skipped are
// the bytes of parts already proven.
func (pr *proof) match(data []byte) bool {
	if cap(pr.ends) < len(data) {
		pr.ends = make([]int32, len(data))
	}
	pr.ends = pr.ends[:len(data)]
	var stack []int32
	for i := 0; i < len(data); i++ {
		switch c := data[i]; c {
		case '"':
			end := stringEnd(data, i)
			if end < 0 {
				return false
			}
			i = end - 1
		case '{', '[':
			stack = append(stack, int32(i))
		case '}', ']':
			if len(stack) == 0 {
				return false
			}
			open := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if data[open]+2 != c { // '{'+2 == '}', '['+2 == ']'
				return false
			}
			pr.ends[open] = int32(i + 1)
		}
	}
	return len(stack) == 0
}

// stringEnd is the offset after the string that opens at i, or -1.
func stringEnd(data []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(data[j:], '"')
		if k < 0 {
			return -1
		}
		j += k
		n := 0 // backslashes before the quote
		for data[j-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return j + 1
		}
		j++
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t') {
		i++
	}
	return i
}

// The keywords a proof knows: what their values must be for the
// compiler to accept them (a subset of what the metaschema allows).
const (
	kwAny        = iota // any JSON value (an annotation, or no keyword of the draft)
	kwString            // a string
	kwBool              // true or false
	kwNumber            // a number
	kwCount             // a non-negative integer
	kwPositive          // a number above 0
	kwArray             // an array of any values
	kwType              // a type name, or a non-empty list of distinct ones
	kwRequired          // a list of distinct strings
	kwPattern           // a regular expression Go's regexp compiles
	kwSchema            // a subschema
	kwSchemaList        // a non-empty list of subschemas
	kwSchemaMap         // an object of subschemas by name
	kwNullable          // OpenAPI 3.0's nullable (made a type before compiling)
)

var proofKeywords = map[string]uint8{
	"type": kwType, "nullable": kwNullable, "description": kwString, "title": kwString,
	"format": kwString, "$comment": kwString, "pattern": kwPattern,
	"enum": kwArray, "examples": kwArray, "const": kwAny, "default": kwAny,
	"deprecated": kwBool, "readOnly": kwBool, "writeOnly": kwBool, "uniqueItems": kwBool,
	"required": kwRequired, "properties": kwSchemaMap,
	"additionalProperties": kwSchema, "items": kwSchema, "not": kwSchema,
	"allOf": kwSchemaList, "anyOf": kwSchemaList, "oneOf": kwSchemaList,
	"minLength": kwCount, "maxLength": kwCount, "minItems": kwCount, "maxItems": kwCount,
	"minProperties": kwCount, "maxProperties": kwCount,
	"minimum": kwNumber, "maximum": kwNumber, "exclusiveMinimum": kwNumber, "exclusiveMaximum": kwNumber,
	"multipleOf": kwPositive,
	// OpenAPI's own, no keywords of draft 2020-12: the compiler ignores them.
	"example": kwAny, "discriminator": kwAny, "xml": kwAny, "externalDocs": kwAny,
}

// proofKeyword is a keyword of proofKeywords: its kind, and a bit of its
// own, to note those met in one object.
type proofKeyword struct {
	kind uint8
	bit  uint64
}

var proofKeywordsByName = func() map[string]proofKeyword {
	out := map[string]proofKeyword{}
	for name, kind := range proofKeywords {
		out[name] = proofKeyword{kind, 1 << len(out)}
	}
	return out
}()

// minRemembered is the size below which a part is proven each time it
// is met rather than remembered: hashing and looking it up costs about
// what reading it does.
const minRemembered = 128

// schema proves the subschema at i (at depth), a root when root is set;
// it returns the offset after it.
func (pr *proof) schema(i, depth int, root bool) (int, bool) {
	data := pr.data
	switch {
	case i >= len(data) || depth > maxProofDepth:
		return 0, false
	case bytes.HasPrefix(data[i:], []byte("true")):
		return i + 4, !root
	case bytes.HasPrefix(data[i:], []byte("false")):
		return i + 5, !root
	case data[i] != '{':
		return 0, false
	}
	end := int(pr.ends[i])
	remember := !root && end-i >= minRemembered // proves remembers the root
	var key [2]uint64
	if remember {
		key = pr.key(data[i:end])
		if pr.known[key]&provenSchema != 0 {
			return end, true
		}
	}
	var seen uint64 // proofKeywordBits of the keywords met
	typeOK, nullable, typeNull := !root, false, false
	i = skipSpace(data, i+1)
	if data[i] == '}' {
		i++
	}
	for i < end {
		kEnd, ok := pr.str(i)
		if !ok {
			return 0, false
		}
		name := data[i+1 : kEnd-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return 0, false // an escaped keyword: read it as the compiler does
		}
		i = skipSpace(data, kEnd)
		if data[i] != ':' {
			return 0, false
		}
		i = skipSpace(data, i+1)
		k, known := proofKeywordsByName[string(name)]
		kw := k.kind
		if !known {
			if !bytes.HasPrefix(name, []byte("x-")) {
				return 0, false
			}
			kw = kwAny
		} else {
			if seen&k.bit != 0 {
				return 0, false // the compiler reads the last
			}
			seen |= k.bit
		}
		start := i
		switch kw {
		case kwType:
			i, typeNull, ok = pr.typeValue(i)
			if root && ok {
				typeOK = string(data[start:i]) == `"object"`
			}
		case kwNullable:
			nullable = bytes.HasPrefix(data[i:], []byte("true"))
			i, ok = pr.value(i, depth+1)
		case kwSchema:
			i, ok = pr.schema(i, depth+1, false)
		case kwSchemaList:
			i, ok = pr.schemaList(i, depth+1)
		case kwSchemaMap:
			i, ok = pr.schemaMap(i, depth+1)
		default:
			i, ok = pr.keyword(kw, i, depth+1)
		}
		if !ok {
			return 0, false
		}
		i = skipSpace(data, i)
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			i++
			if i != end {
				return 0, false
			}
		default:
			return 0, false
		}
	}
	if i != end || !typeOK || (nullable && typeNull) {
		// nullable: true on a type with null in it makes a type list
		// with null twice.
		return 0, false
	}
	if remember {
		pr.known[key] |= provenSchema
	}
	return end, true
}

// keyword proves the value at i of a keyword of kind kw.
func (pr *proof) keyword(kw uint8, i, depth int) (int, bool) {
	data := pr.data
	switch kw {
	case kwString:
		if data[i] != '"' {
			return 0, false
		}
		return pr.str(i)
	case kwPattern:
		end, ok := pr.str(i)
		if !ok || data[i] != '"' {
			return 0, false
		}
		raw := data[i:end]
		compiles, seen := pr.patterns[string(raw)]
		if !seen {
			var s string
			err := json.Unmarshal(raw, &s) // its escapes read as the compiler's decoder reads them
			if err == nil {
				_, err = regexp.Compile(s)
			}
			compiles = err == nil
			pr.patterns[string(raw)] = compiles
		}
		return end, compiles
	case kwBool:
		switch {
		case bytes.HasPrefix(data[i:], []byte("true")):
			return i + 4, true
		case bytes.HasPrefix(data[i:], []byte("false")):
			return i + 5, true
		}
		return 0, false
	case kwNumber, kwCount, kwPositive:
		end, ok := jsonNumber(data, i)
		if !ok {
			return 0, false
		}
		n := data[i:end]
		switch kw {
		case kwCount:
			// Plain digits only, few enough for any int.
			return end, len(n) <= 9 && bytes.IndexFunc(n, func(r rune) bool { return r < '0' || r > '9' }) < 0
		case kwPositive:
			f, err := strconv.ParseFloat(string(n), 64)
			return end, err == nil && f > 0
		}
		return end, true
	case kwArray:
		if data[i] != '[' {
			return 0, false
		}
		return pr.value(i, depth)
	case kwRequired:
		return pr.required(i)
	}
	return pr.value(i, depth)
}

// typeValue proves a type: a name of the draft's types, or a non-empty
// list of distinct ones; null tells whether "null" is among them.
func (pr *proof) typeValue(i int) (end int, null, ok bool) {
	data := pr.data
	name := func(i int) (int, uint8, bool) {
		if data[i] != '"' {
			return 0, 0, false
		}
		end := stringEnd(data, i)
		if end < 0 {
			return 0, 0, false
		}
		switch string(data[i+1 : end-1]) {
		case "array":
			return end, 1 << 0, true
		case "boolean":
			return end, 1 << 1, true
		case "integer":
			return end, 1 << 2, true
		case "number":
			return end, 1 << 3, true
		case "object":
			return end, 1 << 4, true
		case "string":
			return end, 1 << 5, true
		case "null":
			return end, typeNull, true
		}
		return 0, 0, false
	}
	if data[i] == '"' {
		end, t, ok := name(i)
		return end, t == typeNull, ok
	}
	if data[i] != '[' {
		return 0, false, false
	}
	var types uint8
	end, ok = pr.elements(i, func(i int) (int, bool) {
		end, t, ok := name(i)
		if !ok || types&t != 0 {
			return 0, false
		}
		types |= t
		return end, true
	})
	return end, types&typeNull != 0, ok && types != 0
}

const typeNull = 1 << 6

// required proves a list of distinct strings (unescaped: their bytes
// compared).
func (pr *proof) required(i int) (int, bool) {
	data := pr.data
	if data[i] != '[' {
		return 0, false
	}
	var names [][]byte
	return pr.elements(i, func(i int) (int, bool) {
		end, ok := pr.str(i)
		if !ok {
			return 0, false
		}
		name := data[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 || slices.ContainsFunc(names, func(n []byte) bool { return bytes.Equal(n, name) }) {
			return 0, false
		}
		names = append(names, name)
		return end, true
	})
}

// schemaList proves a non-empty list of subschemas.
func (pr *proof) schemaList(i, depth int) (int, bool) {
	data := pr.data
	if data[i] != '[' || data[skipSpace(data, i+1)] == ']' {
		return 0, false
	}
	return pr.elements(i, func(i int) (int, bool) { return pr.schema(i, depth, false) })
}

// schemaMap proves an object of subschemas (properties), any names.
func (pr *proof) schemaMap(i, depth int) (int, bool) {
	return pr.members(i, depth, func(i int) (int, bool) { return pr.schema(i, depth, false) })
}

// members reads the object at i, each member's name as a JSON string and
// its value by f.
func (pr *proof) members(i, depth int, f func(i int) (int, bool)) (int, bool) {
	data := pr.data
	if data[i] != '{' || depth > maxProofDepth {
		return 0, false
	}
	return pr.elements(i, func(i int) (int, bool) {
		i, ok := pr.str(i)
		if !ok {
			return 0, false
		}
		if i = skipSpace(data, i); data[i] != ':' {
			return 0, false
		}
		return f(skipSpace(data, i+1))
	})
}

// elements reads the list or object that opens at i, each element by f
// (which returns the offset after it), and returns the offset after its
// close.
func (pr *proof) elements(i int, f func(i int) (int, bool)) (int, bool) {
	data := pr.data
	closing := data[i] + 2 // '['+2 == ']', '{'+2 == '}'
	i = skipSpace(data, i+1)
	if data[i] == closing {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = f(i); !ok {
			return 0, false
		}
		i = skipSpace(data, i)
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case closing:
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// value proves a JSON value as encoding/json decodes it (its numbers in
// a float64's range).
func (pr *proof) value(i, depth int) (int, bool) {
	data := pr.data
	if depth > maxProofDepth {
		return 0, false
	}
	switch c := data[i]; {
	case c == '"':
		return pr.str(i)
	case c == '{':
		return pr.members(i, depth, func(i int) (int, bool) { return pr.value(i, depth+1) })
	case c == '[':
		return pr.elements(i, func(i int) (int, bool) { return pr.value(i, depth+1) })
	case c == '-' || c >= '0' && c <= '9':
		return jsonNumber(data, i)
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(data[i:], []byte(lit)) {
			return i + len(lit), true
		}
	}
	return 0, false
}

// str proves the JSON string at i: no control characters, valid escapes.
func (pr *proof) str(i int) (int, bool) {
	data := pr.data
	if data[i] != '"' {
		return 0, false
	}
	end := stringEnd(data, i)
	if end < 0 {
		return 0, false
	}
	s := data[i+1 : end-1]
	for j := 0; j < len(s); j++ {
		switch c := s[j]; {
		case c < 0x20:
			return 0, false
		case c == '\\':
			j++
			if j == len(s) {
				return 0, false
			}
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s) {
					return 0, false
				}
				for _, h := range s[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return 0, false
					}
				}
				j += 4
			default:
				return 0, false
			}
		}
	}
	return end, true
}

// jsonNumber proves the JSON number at i, in a float64's range as
// encoding/json requires.
func jsonNumber(data []byte, i int) (int, bool) {
	start := i
	if i < len(data) && data[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
			n++
		}
		return n
	}
	if i < len(data) && data[i] == '0' {
		i++
	} else if digits() == 0 {
		return 0, false
	}
	plain := true
	if i < len(data) && data[i] == '.' {
		i++
		if digits() == 0 {
			return 0, false
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		plain = false
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		if digits() == 0 {
			return 0, false
		}
	}
	if !plain || i-start > 15 {
		if _, err := strconv.ParseFloat(string(data[start:i]), 64); err != nil {
			return 0, false
		}
	}
	return i, true
}
