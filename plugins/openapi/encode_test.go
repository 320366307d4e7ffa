package openapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// asEncodingJSON is what marshal (encoding/json) makes of v.
func asEncodingJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEncodeTreeAsEncodingJSON(t *testing.T) {
	type other struct {
		A string `json:"a"`
	}
	cases := map[string]any{
		"scalars":     []any{nil, true, false, "", 0, -3, 0.0, math.Copysign(0, -1), 0.1, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, -2.5e-300, math.MaxFloat64},
		"escapes":     "a\"b\\c\n\r\t\b\f\x00\x1f\x7f<>&\u2028\u2029é\xff\xc3",
		"keys sorted": map[string]any{"b": 1.0, "a": map[string]any{"z": nil, "": "e", "\n": []any{}}, "B": []string{"x", "\u2028"}},
		"nil lists":   map[string]any{"a": []any(nil), "b": []string(nil), "c": map[string]any(nil)},
		"empty":       map[string]any{"a": []any{}, "b": []string{}, "c": map[string]any{}},
		"others":      map[string]any{"n": json.Number("1.50"), "s": other{"<x>"}, "i64": int64(7), "r": json.RawMessage(`{"x":1}`)},
	}
	deep := any("leaf")
	for range maxTreeDepth + 5 {
		deep = map[string]any{"d": []any{deep}}
	}
	cases["deeper than the encoder reads"] = deep
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := encodeTree(v)
			if err != nil {
				t.Fatal(err)
			}
			if want := asEncodingJSON(t, v); string(got) != want {
				t.Errorf("encodeTree\n%s\nencoding/json\n%s", got, want)
			}
		})
	}
	for _, f := range []float64{math.NaN(), math.Inf(1)} {
		if _, err := encodeTree(map[string]any{"x": f}); err == nil {
			t.Errorf("%v encoded", f)
		}
	}
	cycle := map[string]any{}
	cycle["self"] = cycle
	if _, err := encodeTree(cycle); err == nil {
		t.Error("a tree holding itself encoded")
	}
}

// testDocuments are the test documents and Stripe's, by name.
func testDocuments(t *testing.T) map[string][]byte {
	files, _ := filepath.Glob("testdata/*.yaml")
	more, _ := filepath.Glob("testdata/*.json")
	docs := map[string][]byte{stripeSpec: readCorpus(t, stripeSpec)}
	for _, name := range append(files, more...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		docs[name] = b
	}
	return docs
}

// TestEncodeTreeDocuments encodes whole documents as the converter's
// trees are made of them (decoded JSON and YAML), and every plugin's
// parameters are those encoding/json makes.
func TestEncodeTreeDocuments(t *testing.T) {
	for name, data := range testDocuments(t) {
		doc, err := Load(data, name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := encodeTree(doc.Raw)
		if err != nil {
			t.Fatal(err)
		}
		if want := asEncodingJSON(t, doc.Raw); string(got) != want {
			t.Errorf("%s: the document encodes differently", name)
		}
		ops, _, err := Convert(doc, Options{BaseURL: "https://api.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			var tree any
			if err := json.Unmarshal(op.Plugin.Parameters, &tree); err != nil {
				t.Fatal(err)
			}
			if want := asEncodingJSON(t, tree); !bytes.Equal(op.Plugin.Parameters, []byte(want)) {
				t.Errorf("%s %s: parameters\n%s\nencoding/json\n%s", name, op.Key, op.Plugin.Parameters, want)
			}
		}
	}
}

// FuzzEncodeTree: any JSON document decodes to a tree that encodeTree
// writes as encoding/json does.
func FuzzEncodeTree(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5e-7,"\u2028\ud800x"],"b":{"c":null,"":true}}`, `"\u0000<&>"`, `[1e21,-0,0.000001]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		got, err := encodeTree(v)
		if err != nil {
			t.Fatal(err)
		}
		if want := asEncodingJSON(t, v); string(got) != want {
			t.Errorf("encodeTree\n%s\nencoding/json\n%s", got, want)
		}
	})
}

// TestContentHashOfMarshal: the hash written straight from the encoder is
// that of marshal's bytes, which stored hashes were made of (then its
// response words', when it has any).
func TestContentHashOfMarshal(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := Load(data, name)
		if err != nil {
			t.Fatal(err)
		}
		ops, _, err := Convert(doc, Options{BaseURL: "https://api.example.com"})
		if err != nil {
			t.Fatal(err)
		}
		for _, op := range ops {
			b, err := marshal(op.Plugin)
			if err != nil {
				t.Fatal(err)
			}
			if len(op.Plugin.ResponseWords) > 0 {
				words, _ := marshal(op.Plugin.ResponseWords)
				b = append(b, words...)
			}
			sum := sha256.Sum256(b)
			got, err := ContentHash(op)
			if err != nil || got != hex.EncodeToString(sum[:]) {
				t.Errorf("%s %s: ContentHash %s, %v; sha256 of marshal %x", name, op.Key, got, err, sum)
			}
		}
	}
}
