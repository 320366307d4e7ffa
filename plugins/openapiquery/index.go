package openapiquery

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/plugins/schema"
)

// methods are the operation keys of a path item, in the order listed.
var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// validMethod reports whether m (any case) is an HTTP method an operation
// can have; it returns it upper-cased.
func validMethod(m string) (string, bool) {
	l := strings.ToLower(m)
	return strings.ToUpper(l), slices.Contains(methods, l)
}

// Operation is one operation of a document, as search_operations lists it.
type Operation struct {
	// OperationID is empty when the document gives none; such an
	// operation is still found by "METHOD /path".
	OperationID string
	Method      string // upper case
	Path        string
	Tags        []string
	Summary     string
	Description string

	item map[string]any // the path item, for its parameters
	op   map[string]any
	text [numFields]string // normalized search text per field
}

// key names the operation in messages: "GET /pets".
func (o *Operation) key() string { return o.Method + " " + o.Path }

// Index is a parsed document with its operations and schemas indexed. It is
// built once per document hash and read-only afterwards, so one index
// serves concurrent calls.
type Index struct {
	Doc     *openapi.Document
	lookup  schema.Lookup
	ops     []*Operation // by path, then method order
	byID    map[string][]*Operation
	byKey   map[string]*Operation // "GET /pets"
	schemas []string              // names under components.schemas, sorted
	// noPaths records a document without a paths object (seed 000 §6).
	noPaths bool
}

// NewIndex indexes doc.
func NewIndex(doc *openapi.Document) *Index {
	x := &Index{
		Doc:    doc,
		lookup: schema.OpenAPILookup(doc.Raw),
		byID:   make(map[string][]*Operation),
		byKey:  make(map[string]*Operation),
	}
	paths, ok := doc.Raw["paths"].(map[string]any)
	x.noPaths = !ok
	for _, p := range slices.Sorted(maps.Keys(paths)) {
		if !strings.HasPrefix(p, "/") {
			continue // x- extensions
		}
		v, err := x.lookup.Deref(paths[p]) // 3.1 path items may be references
		item, ok := v.(map[string]any)
		if err != nil || !ok {
			continue
		}
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			o := &Operation{Method: strings.ToUpper(m), Path: p, item: item, op: op}
			o.OperationID, _ = op["operationId"].(string)
			o.Summary, _ = op["summary"].(string)
			o.Description, _ = op["description"].(string)
			tags, _ := op["tags"].([]any)
			for _, t := range tags {
				if s, ok := t.(string); ok {
					o.Tags = append(o.Tags, s)
				}
			}
			o.text = [numFields]string{
				fieldTag:         normalize(strings.Join(o.Tags, " \n ")),
				fieldOperationID: normalize(o.OperationID),
				fieldPath:        normalize(o.Path),
				fieldSummary:     normalize(o.Summary),
				fieldDescription: normalize(o.Description),
			}
			x.ops = append(x.ops, o)
			x.byKey[o.key()] = o
			if o.OperationID != "" {
				x.byID[o.OperationID] = append(x.byID[o.OperationID], o)
			}
		}
	}
	if comps, ok := doc.Raw["components"].(map[string]any); ok {
		if s, ok := comps["schemas"].(map[string]any); ok {
			x.schemas = slices.Sorted(maps.Keys(s))
		}
	}
	return x
}

// Operations returns every operation, by path and then method.
func (x *Index) Operations() []*Operation { return x.ops }

// SchemaNames returns the names under components.schemas, sorted.
func (x *Index) SchemaNames() []string { return x.schemas }

// operation finds an operation by its operationId or, for operations that
// have none, by "METHOD /path".
func (x *Index) operation(id string) (*Operation, error) {
	if x.noPaths {
		return nil, errNoPaths()
	}
	switch ops := x.byID[id]; len(ops) {
	case 1:
		return ops[0], nil
	case 0:
		if m, p, ok := strings.Cut(id, " "); ok {
			if um, ok := validMethod(m); ok {
				if o := x.byKey[um+" "+p]; o != nil {
					return o, nil
				}
			}
		}
		return nil, &Error{Code: CodeOperationNotFound, Message: "no operation has operationId " + quote(id),
			Details: map[string]any{"operationId": id}}
	default:
		keys := make([]string, len(ops))
		for i, o := range ops {
			keys[i] = o.key()
		}
		return nil, &Error{Code: CodeOperationNotUnique, Message: "operationId " + quote(id) + " is not unique: " + strings.Join(keys, ", "),
			Details: map[string]any{"operationId": id, "operations": keys}}
	}
}

// The fields a query searches.
const (
	fieldTag = iota
	fieldOperationID
	fieldPath
	fieldSummary
	fieldDescription
	numFields
)

// fieldWeight ranks where a term matched: an operationId, path or tag names
// the operation, a description merely mentions the term.
var fieldWeight = [numFields]float64{
	fieldTag:         3,
	fieldOperationID: 4,
	fieldPath:        3,
	fieldSummary:     2,
	fieldDescription: 1,
}

// Match selects the fields a query searches (seed 000 §4.2.1).
type Match struct {
	Tag         bool `json:"tag"`
	OperationID bool `json:"operationId"`
	Path        bool `json:"path"`
	Summary     bool `json:"summary"`
	Description bool `json:"description"`
}

// AllFields searches every field, the default.
var AllFields = Match{true, true, true, true, true}

func (m Match) fields() [numFields]bool {
	return [numFields]bool{
		fieldTag:         m.Tag,
		fieldOperationID: m.OperationID,
		fieldPath:        m.Path,
		fieldSummary:     m.Summary,
		fieldDescription: m.Description,
	}
}

// Query is a search over the operations.
type Query struct {
	// Text is matched case-insensitively, word by word: every word must
	// occur in one of the fields Match selects. Words are runs of letters
	// and digits, so "purchase requisition" finds
	// purchase_requisition_list and /purchase-requisition. Empty lists
	// every operation.
	Text   string
	Match  Match
	Method string // "" for any method
}

// Hit is an operation a query found, with its relevance: the sum over the
// query's words of the weight of the best field each occurs in, plus a
// bonus when the whole query occurs as a phrase.
type Hit struct {
	*Operation
	Relevance float64
}

// Find returns the operations matching q, most relevant first (document
// order among equals). It fails only on an invalid method.
func (x *Index) Find(q Query) ([]Hit, error) {
	var method string
	if q.Method != "" {
		m, ok := validMethod(q.Method)
		if !ok {
			return nil, &Error{Code: CodeInvalidArguments, Message: "invalid HTTP method " + quote(q.Method),
				Details: map[string]any{"method": q.Method}}
		}
		method = m
	}
	phrase := normalize(q.Text)
	words := strings.Fields(phrase)
	fields := q.Match.fields()
	var hits []Hit
	for _, o := range x.ops {
		if method != "" && o.Method != method {
			continue
		}
		score, ok := o.score(words, phrase, fields)
		if ok {
			hits = append(hits, Hit{o, score})
		}
	}
	// Stable: equal scores keep document order.
	slices.SortStableFunc(hits, func(a, b Hit) int { return cmp.Compare(b.Relevance, a.Relevance) })
	return hits, nil
}

func (o *Operation) score(words []string, phrase string, fields [numFields]bool) (float64, bool) {
	var score float64
	for _, w := range words {
		best := 0.0
		for f, on := range fields {
			if on && fieldWeight[f] > best && strings.Contains(o.text[f], w) {
				best = fieldWeight[f]
			}
		}
		if best == 0 {
			return 0, false
		}
		score += best
	}
	if len(words) > 1 {
		for f, on := range fields {
			if on && strings.Contains(o.text[f], phrase) {
				score += fieldWeight[f]
				break
			}
		}
	}
	return score, true
}

// normalize lower-cases s and turns every run of characters other than
// letters and digits into one space, so that snake_case, kebab-case and
// paths split into words.
func normalize(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
		} else if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}

// OperationSummary is one result of search_operations (seed 000 §4.2.2).
type OperationSummary struct {
	OperationID string   `json:"operationId"`
	Method      string   `json:"method"`
	Path        string   `json:"path"`
	Tags        []string `json:"tags"`
	Summary     *string  `json:"summary"`
	Description *string  `json:"description"`
}

// DefaultLimit is the number of results when no limit is given.
const DefaultLimit = 50

// SearchOperations answers search_operations: at most limit operations
// matching q, most relevant first. An operation without an operationId is
// listed under "METHOD /path", which the other tools accept in its place.
func (x *Index) SearchOperations(q Query, limit int) ([]OperationSummary, error) {
	if x.noPaths {
		return nil, errNoPaths()
	}
	hits, err := x.Find(q)
	if err != nil {
		return nil, err
	}
	out := make([]OperationSummary, 0, min(limit, len(hits)))
	for _, h := range hits[:min(limit, len(hits))] {
		out = append(out, OperationSummary{h.id(), h.Method, h.Path, nonNil(h.Tags), nilIfEmpty(h.Summary), nilIfEmpty(h.Description)})
	}
	return out, nil
}

func nilIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
