package openapi

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/blindexec/blindexec/internal/jsontext"
)

// A parameter schema is a tree of maps, lists and scalars that
// encoding/json encodes by reflection, copying each map value and sorting
// a fresh slice of keys per map: a quarter of a conversion's CPU and 40%
// of its allocations (BenchmarkConvertStripe). treeEncoder writes the same
// bytes (TestEncodeTreeAsEncodingJSON, FuzzEncodeTree) for the types a
// decoded document holds and hands any other value to encoding/json.

// treeEncoder appends JSON; keys is a stack of the maps' sorted keys, its
// space reused from one map to the next.
type treeEncoder struct {
	buf  []byte
	keys []string
}

// encodeTree encodes v as json.Encoder does with SetEscapeHTML(false),
// without the final newline.
// The result is a copy of its exact size: a large import holds every
// plugin's parameters at once.
func encodeTree(v any) (json.RawMessage, error) {
	e := treeEncoders.Get().(*treeEncoder)
	defer func() {
		e.buf = e.buf[:0]
		treeEncoders.Put(e)
	}()
	if err := e.value(v, 0); err != nil {
		return nil, err
	}
	return bytes.Clone(e.buf), nil
}

var treeEncoders = sync.Pool{New: func() any { return &treeEncoder{} }}

// maxTreeDepth is where encoding/json takes over, whose cycle check then
// refuses a tree that holds itself rather than recursing forever.
const maxTreeDepth = 1000

func (e *treeEncoder) value(v any, depth int) error {
	if depth > maxTreeDepth {
		return e.fallback(v)
	}
	switch v := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case string:
		e.buf = jsontext.AppendString(e.buf, v)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case float64:
		return e.float(v)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(v), 10)
	case map[string]any:
		if v == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		base := len(e.keys)
		for k := range v {
			e.keys = append(e.keys, k)
		}
		slices.Sort(e.keys[base:])
		e.buf = append(e.buf, '{')
		for i := base; i < len(e.keys); i++ {
			if i > base {
				e.buf = append(e.buf, ',')
			}
			k := e.keys[i]
			e.buf = jsontext.AppendString(e.buf, k)
			e.buf = append(e.buf, ':')
			if err := e.value(v[k], depth+1); err != nil {
				return err
			}
		}
		clear(e.keys[base:])
		e.keys = e.keys[:base]
		e.buf = append(e.buf, '}')
	case []any:
		if v == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i, it := range v {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(it, depth+1); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case []string:
		if v == nil {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		e.buf = append(e.buf, '[')
		for i, s := range v {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.buf = jsontext.AppendString(e.buf, s)
		}
		e.buf = append(e.buf, ']')
	default:
		return e.fallback(v)
	}
	return nil
}

func (e *treeEncoder) fallback(v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	e.buf = append(e.buf, bytes.TrimSuffix(b.Bytes(), []byte("\n"))...)
	return nil
}

// float writes f as encoding/json does: the shortest form, an exponent
// only for very small or large numbers, and no leading zero in it.
func (e *treeEncoder) float(f float64) error {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(e.buf)
	e.buf = strconv.AppendFloat(e.buf, f, format, -1, 64)
	if format == 'e' {
		// e-09 → e-9
		if b := e.buf[start:]; len(b) >= 4 && b[len(b)-4] == 'e' && b[len(b)-3] == '-' && b[len(b)-2] == '0' {
			b[len(b)-2] = b[len(b)-1]
			e.buf = e.buf[:len(e.buf)-1]
		}
	}
	return nil
}
