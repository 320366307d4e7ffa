package engine

import (
	"bufio"
	"bytes"
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

var fuzzPlugins = []string{
	`{"name":"get","description":"d","parameters":{"type":"object","properties":{"org":{},"repo":{},"a":{},"b":{},"c":{},"h":{},"k":{}}},
	  "execution":{"method":"GET","base_url":"http://api.example.com:8443/v1/{org}/repos/{repo}","query":{"v":"1"},
	    "param_placement":{"a":"query","b":{"in":"query","style":"deepObject"},"c":{"in":"query","style":"pipeDelimited","explode":false},
	      "h":{"in":"header","name":"X-H"},"k":{"in":"cookie","name":"sid"}}}}`,
	`{"name":"form","description":"d","parameters":{"type":"object","properties":{"id":{}}},
	  "execution":{"method":"POST","base_url":"https://api.example.com/items/{id}","content_type":"application/x-www-form-urlencoded"}}`,
	`{"name":"styles","description":"d","parameters":{"type":"object","properties":{"m":{},"l":{},"f":{"contentEncoding":"base64"}}},
	  "execution":{"method":"PUT","base_url":"http://10.0.0.1/x/{m}/y/{l}","content_type":"multipart/form-data",
	    "param_placement":{"m":{"in":"path","style":"matrix","explode":true},"l":{"in":"path","style":"label"},"f":{"in":"body","filename":"f.bin"}}}}`,
	`{"name":"headers","description":"d","parameters":{"type":"object","properties":{"p":{}}},
	  "execution":{"method":"GET","base_url":"https://h.example/{p}","param_placement":"header"}}`,
	`{"name":"whole","description":"d","parameters":{"type":"object","properties":{"v":{}}},
	  "execution":{"method":"POST","base_url":"https://h.example/raw","content_type":"text/plain","param_placement":{"v":{"in":"body","name":"$"}}}}`,
}

// Issue 3, point 8: arbitrary arguments against valid plugins never panic
// and never produce a request to a host other than the plugin's, or with
// a path of another shape.
func FuzzBuildRequest(f *testing.F) {
	for _, seed := range []string{
		`{"org":"a","repo":"b","a":[1,2],"b":{"x":{"y":1}},"c":["p","q"],"h":"v","k":"s"}`,
		`{"org":"..","repo":"@evil.com","a":"x&y=1#f"}`,
		`{"id":"../x","m":{"a":"b"},"l":["..",""],"f":"AAEC","p":"x"}`,
		`{"Host":"evil.com","X-Forwarded-Host":"e","p":"/","v":[1]}`,
		`{"org":"\r\n","repo":"%2F","h":"a\r\nX: y","Bad Header":"1"}`,
	} {
		f.Add(seed)
	}
	var ps []*plugins.Plugin
	for _, doc := range fuzzPlugins {
		p, err := plugins.ParseJSON([]byte(doc))
		if err != nil {
			f.Fatal(err)
		}
		ps = append(ps, p)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		args, err := decodeArguments([]byte(raw))
		if err != nil {
			return
		}
		for _, p := range ps {
			schema, err := schemaOf(p)
			if err != nil {
				t.Fatal(err)
			}
			o, err := buildRequest(p, args, schema)
			if err != nil {
				if !isRefused(err) {
					t.Fatalf("%s: error is not a refusal: %v", p.Name, err)
				}
				continue
			}
			checkOnTheWire(t, p, o)
		}
	})
}

// checkOnTheWire serializes the request as net/http would send it, parses
// it back as a server would, and compares host and path shape with the
// plugin's base_url.
func checkOnTheWire(t *testing.T, p *plugins.Plugin, o *outbound) {
	t.Helper()
	base := p.Execution.BaseURL
	wantHost := strings.TrimPrefix(strings.TrimPrefix(origin(base), "http://"), "https://")
	wantScheme, _, _ := strings.Cut(base, "://")
	req, err := o.newRequest(context.Background())
	if err != nil {
		if !isRefused(err) {
			t.Fatalf("%s: error is not a refusal: %v", p.Name, err)
		}
		return
	}
	if req.URL.Scheme != wantScheme || req.URL.Host != wantHost {
		t.Fatalf("%s: request to %s://%s, want %s://%s", p.Name, req.URL.Scheme, req.URL.Host, wantScheme, wantHost)
	}
	var wire bytes.Buffer
	if err := req.Write(&wire); err != nil {
		t.Fatalf("%s: the request cannot be written: %v", p.Name, err)
	}
	got, err := http.ReadRequest(bufio.NewReader(&wire))
	if err != nil {
		t.Fatalf("%s: the request on the wire does not parse: %v\n%s", p.Name, err, wire.String())
	}
	if got.Host != wantHost {
		t.Fatalf("%s: Host %q, want %q", p.Name, got.Host, wantHost)
	}
	path, _, _ := strings.Cut(got.RequestURI, "?")
	basePath := strings.TrimPrefix(base, origin(base))
	basePath, _, _ = strings.Cut(basePath, "?")
	if strings.Count(path, "/") != strings.Count(basePath, "/") {
		t.Fatalf("%s: path %q has another shape than %q", p.Name, path, basePath)
	}
	for seg := range strings.SplitSeq(path, "/") {
		if seg == "." || seg == ".." {
			t.Fatalf("%s: dot segment in %q", p.Name, path)
		}
	}
	// Nor once decoded, as a server or a proxy decoding more than once, or
	// splitting on backslashes too, would see it (issue 13, point 4).
	decoded := path
	for range 4 {
		d, err := url.PathUnescape(decoded)
		if err != nil || d == decoded {
			break
		}
		decoded = d
	}
	for seg := range strings.FieldsFuncSeq(decoded, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg, _, _ = strings.Cut(seg, ";"); seg == "." || seg == ".." {
			t.Fatalf("%s: a dot segment once %q is decoded", p.Name, path)
		}
	}
	for name, vs := range got.Header {
		for _, v := range vs {
			if strings.ContainsAny(name+v, "\r\n\x00") {
				t.Fatalf("%s: header %q: %q", p.Name, name, v)
			}
		}
	}
	if len(got.Header.Values("Host")) > 0 {
		t.Fatalf("%s: a Host header field", p.Name)
	}
}
