package invisible

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
)

// Schema removes invisible characters from the texts of a JSON Schema:
// every "title", "description" and "$comment" of the schema and of each
// schema inside it ($defs, definitions, properties, patternProperties,
// items, prefixItems, allOf/anyOf/oneOf, not, if/then/else, …). Values
// (enum, const, default, examples) are data a call sends, and property
// names are the arguments' names: neither is touched. Each removal is
// reported under field, the schema's own path ("parameters"). The bytes
// are edited in place, so key order and layout stay; raw that is not
// JSON is returned as it is, for the caller's decoder to report.
func Schema(raw []byte, field string) ([]byte, []Removal) {
	return splice(raw, field, roleSchema, nil, nil)
}

// Object is Schema for a JSON object holding texts and schemas: the
// strings at the keys text name, and the schemas at the keys schemas
// name (a plugin document: name, title, description; parameters).
func Object(raw []byte, text, schemas []string) ([]byte, []Removal) {
	return splice(raw, "", roleObject, text, schemas)
}

type role int

const (
	roleData      role = iota // nothing to clean inside
	roleSchema                // a schema
	roleSchemaMap             // an object whose values are schemas
	roleSchemaSeq             // an array of schemas (or, for items, one schema)
	roleText                  // a text to clean, when a string
	roleObject                // Object's root
)

// schemaKeys says what a schema keyword holds.
var schemaKeys = map[string]role{
	"title": roleText, "description": roleText, "$comment": roleText,
	"properties": roleSchemaMap, "patternProperties": roleSchemaMap, "$defs": roleSchemaMap,
	"definitions": roleSchemaMap, "dependentSchemas": roleSchemaMap,
	"items": roleSchemaSeq, "prefixItems": roleSchemaSeq, "allOf": roleSchemaSeq, "anyOf": roleSchemaSeq,
	"oneOf": roleSchemaSeq, "additionalItems": roleSchema, "additionalProperties": roleSchema,
	"unevaluatedItems": roleSchema, "unevaluatedProperties": roleSchema, "not": roleSchema,
	"if": roleSchema, "then": roleSchema, "else": roleSchema, "contains": roleSchema,
	"propertyNames": roleSchema, "contentSchema": roleSchema,
}

type edit struct {
	start, end int
	text       []byte
}

type walker struct {
	dec           *json.Decoder
	raw           []byte
	text, schemas []string
	edits         []edit
	removals      []Removal
}

func splice(raw []byte, field string, root role, text, schemas []string) ([]byte, []Removal) {
	if plain(raw) && !bytes.Contains(raw, []byte(`\u`)) {
		return raw, nil // no escape and nothing past printable ASCII: nothing to remove
	}
	w := &walker{dec: json.NewDecoder(bytes.NewReader(raw)), raw: raw, text: text, schemas: schemas}
	if err := w.value(field, root); err != nil {
		return raw, nil
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return raw, nil // trailing data: not one JSON value
	}
	if len(w.edits) == 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw))
	last := 0
	for _, e := range w.edits {
		out = append(out, raw[last:e.start]...)
		out = append(out, e.text...)
		last = e.end
	}
	return append(out, raw[last:]...), w.removals
}

// value reads one value at path, whose role is r.
func (w *walker) value(path string, r role) error {
	before := int(w.dec.InputOffset())
	tok, err := w.dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case string:
		if r == roleText {
			w.clean(path, t, before)
		}
	case json.Delim:
		switch t {
		case '{':
			return w.object(path, r)
		case '[':
			inner := roleData
			if r == roleSchemaSeq {
				inner = roleSchema
			}
			for i := 0; w.dec.More(); i++ {
				if err := w.value(path+"["+strconv.Itoa(i)+"]", inner); err != nil {
					return err
				}
			}
			_, err = w.dec.Token() // ]
			return err
		}
	}
	return nil
}

func (w *walker) object(path string, r role) error {
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		inner := roleData
		switch r {
		case roleSchema:
			inner = schemaKeys[key]
		case roleSchemaSeq: // items as one schema
			inner = schemaKeys[key]
		case roleSchemaMap:
			inner = roleSchema
		case roleObject:
			inner = w.rootRole(key)
		}
		if err := w.value(join(path, key), inner); err != nil {
			return err
		}
	}
	_, err := w.dec.Token() // }
	return err
}

func (w *walker) rootRole(key string) role {
	for _, k := range w.text {
		if k == key {
			return roleText
		}
	}
	for _, k := range w.schemas {
		if k == key {
			return roleSchema
		}
	}
	return roleData
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// clean records an edit of the string literal that ends where the decoder
// stands, when Remove changes its value s. Between before and the
// literal are only white space and the delimiters the decoder skipped.
func (w *walker) clean(path, s string, before int) {
	out, f := Remove(s)
	if f.Count == 0 {
		return
	}
	end := int(w.dec.InputOffset())
	lit := bytes.TrimLeft(w.raw[before:end], " \t\r\n:,")
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return // a string always encodes
	}
	w.edits = append(w.edits, edit{start: end - len(lit), end: end, text: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))})
	w.removals = append(w.removals, Removal{Field: path, Count: f.Count, Kinds: f.Kinds})
}
