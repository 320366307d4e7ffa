package engine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/net/http/httpguts"

	"github.com/blindexec/blindexec/plugins"
)

// The serializers of 2026-11-29: deepObject over an array (d), parameters
// given as content in the query and headers (cj, ct, hj, ht), a typed
// multipart part without a filename (sdp) beside a plain field and a file.
const (
	serializedQueryDoc = `{"name":"q","description":"d","parameters":{"type":"object","properties":{"d":{},"cj":{},"ct":{},"hj":{},"ht":{}}},
	  "execution":{"method":"GET","base_url":"https://api.example/x?v=1","param_placement":{
	    "d":{"in":"query","style":"deepObject"},
	    "cj":{"in":"query","content_type":"application/json"},"ct":{"in":"query","content_type":"text/plain"},
	    "hj":{"in":"header","name":"X-J","content_type":"application/json"},"ht":{"in":"header","name":"X-T","content_type":"text/plain"}}}}`
	serializedPartsDoc = `{"name":"m","description":"d","parameters":{"type":"object","properties":{"sdp":{},"plain":{},"f":{}}},
	  "execution":{"method":"POST","base_url":"https://api.example/m","content_type":"multipart/form-data","param_placement":{
	    "sdp":{"in":"body","content_type":"application/sdp"},"f":{"in":"body","filename":"f.bin"}}}}`
)

// FuzzSerializedArguments: whatever keys and values a model gives, the
// request on the wire, read back as a server reads it (url.ParseQuery,
// net/http's headers, mime/multipart), holds exactly the arguments given:
// no parameter, header or part more, none changed; or the call is refused.
func FuzzSerializedArguments(f *testing.F) {
	// TestBuildRequest's content and deepObject rows, and values that
	// would end a parameter, a header or a part.
	f.Add("k", "v w", "x", false)
	f.Add("k", "v w", "x", true)
	f.Add("a]&d[b", "1&v=2", "x\r\nX-Evil: 1", true)
	f.Add("", "", "", false)
	f.Add("\"", "v=x; name=\"evil\"", "\r\n--", true)
	f.Add("k", " padded ", "\x7f", false)
	f.Add("é", "\xff", "\u2028", true)
	qp, err := plugins.ParseJSON([]byte(serializedQueryDoc))
	if err != nil {
		f.Fatal(err)
	}
	mp, err := plugins.ParseJSON([]byte(serializedPartsDoc))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, key, s1, s2 string, asArray bool) {
		var d any = map[string]any{key: s1}
		if asArray {
			d = []any{s1, s2}
		}
		// The arguments as a model sends them: JSON (invalid UTF-8 made
		// U+FFFD on the way).
		raw, _ := json.Marshal(map[string]any{"d": d, "cj": map[string]any{key: s2}, "ct": s2, "hj": s1, "ht": s2})
		args, err := decodeArguments(raw)
		if err != nil {
			t.Fatal(err)
		}
		got := roundTrip(t, qp, args)
		if got == nil {
			return
		}
		q, err := url.ParseQuery(got.URL.RawQuery)
		if err != nil {
			t.Fatalf("query %q does not parse: %v", got.URL.RawQuery, err)
		}
		want := url.Values{"v": {"1"}, "ct": {str(args["ct"])}}
		switch d := args["d"].(type) {
		case map[string]any:
			for k, v := range d {
				want["d["+k+"]"] = []string{str(v)}
			}
		case []any:
			for i, v := range d {
				want["d["+strconv.Itoa(i)+"]"] = []string{str(v)}
			}
		}
		var cj any
		if len(q["cj"]) != 1 || json.Unmarshal([]byte(q.Get("cj")), &cj) != nil || !reflect.DeepEqual(cj, anyJSON(t, args["cj"])) {
			t.Fatalf("cj read back %q from %q, given %v", q["cj"], got.URL.RawQuery, args["cj"])
		}
		delete(q, "cj")
		if !reflect.DeepEqual(q, want) {
			t.Fatalf("query read back %v from %q, want %v", q, got.URL.RawQuery, want)
		}
		var hj any
		if vs := got.Header.Values("X-J"); len(vs) != 1 || json.Unmarshal([]byte(vs[0]), &hj) != nil || hj != args["hj"] {
			t.Fatalf("X-J read back %q, given %q", vs, args["hj"])
		}
		if vs := got.Header.Values("X-T"); len(vs) != 1 || vs[0] != args["ht"] {
			t.Fatalf("X-T read back %q, given %q", vs, args["ht"])
		}
		for name := range got.Header {
			if !slices.Contains([]string{"X-J", "X-T", "User-Agent", "Accept-Encoding"}, name) {
				t.Fatalf("a header %q more", name)
			}
		}

		// A file given as an object names its own filename and type.
		var file any = key
		if asArray {
			file = map[string]any{"content": key, "filename": s1, "content_type": s2}
		}
		args, err = decodeArguments(mustMarshal(t, map[string]any{"sdp": s1, "plain": s2, "f": file}))
		if err != nil {
			t.Fatal(err)
		}
		if got = roundTrip(t, mp, args); got == nil {
			return
		}
		ct, params, err := mime.ParseMediaType(got.Header.Get("Content-Type"))
		if err != nil || ct != "multipart/form-data" {
			t.Fatalf("Content-Type %q: %v", got.Header.Get("Content-Type"), err)
		}
		mr := multipart.NewReader(got.Body, params["boundary"])
		for _, w := range []struct{ name, file, ctype string }{{"f", "f.bin", "application/octet-stream"}, {"plain", "", ""}, {"sdp", "", "application/sdp"}} {
			part, err := mr.NextRawPart()
			if err != nil {
				t.Fatalf("part %s: %v", w.name, err)
			}
			b, err := io.ReadAll(part)
			if err != nil {
				t.Fatalf("part %s: %v", w.name, err)
			}
			value := args[w.name]
			if obj, ok := value.(map[string]any); ok {
				// Its filename and type are the model's: read back as
				// one part's, whatever they hold.
				value, w.file, w.ctype = obj["content"], part.FileName(), part.Header.Get("Content-Type")
				if w.file == "" {
					t.Fatalf("part f: no filename read back from %q", part.Header.Get("Content-Disposition"))
				}
			}
			if part.FormName() != w.name || part.FileName() != w.file || part.Header.Get("Content-Type") != w.ctype || string(b) != str(value) {
				t.Fatalf("part %q (file %q, %q) read back %q, want %s (file %q, %q) %q",
					part.FormName(), part.FileName(), part.Header.Get("Content-Type"), b, w.name, w.file, w.ctype, value)
			}
			if len(part.Header) != len(slices.DeleteFunc([]string{"Content-Disposition", w.ctype}, func(s string) bool { return s == "" })) {
				t.Fatalf("part %s: headers %v", w.name, part.Header)
			}
		}
		if part, err := mr.NextPart(); err != io.EOF {
			t.Fatalf("a part more: %v, %v", part, err)
		}
	})
}

// roundTrip builds p's request from args, writes it as net/http sends it
// and reads it back as a server does; nil when the call is refused.
func roundTrip(t *testing.T, p *plugins.Plugin, args map[string]any) *http.Request {
	t.Helper()
	schema, err := schemaOf(p)
	if err != nil {
		t.Fatal(err)
	}
	o, err := buildRequest(p, args, schema)
	if err != nil {
		if !isRefused(err) {
			t.Fatalf("%s: error is not a refusal: %v", p.Name, err)
		}
		return nil
	}
	req, err := o.newRequest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for name, vs := range req.Header {
		for _, v := range vs {
			if !httpguts.ValidHeaderFieldName(name) || !httpguts.ValidHeaderFieldValue(v) {
				t.Fatalf("%s: header %q: %q is not valid", p.Name, name, v)
			}
		}
	}
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		t.Fatalf("%s: the request cannot be written: %v", p.Name, err)
	}
	got, err := http.ReadRequest(bufio.NewReader(&wire))
	if err != nil {
		t.Fatalf("%s: the request on the wire does not parse: %v\n%s", p.Name, err, wire.String())
	}
	return got
}

func str(v any) string { s, _ := v.(string); return s }

func mustMarshal(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// anyJSON is v as encoding/json reads it back (json.Number as float64).
func anyJSON(t *testing.T, v any) any {
	var out any
	if err := json.Unmarshal(mustMarshal(t, v), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
