package openapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blindexec/blindexec/egress/egresstest"
	"github.com/blindexec/blindexec/engine"
)

// hit is a request as the upstream received it: the raw request URI and
// body bytes.
type hit struct {
	Method     string
	RequestURI string
	Header     http.Header
	Body       []byte
}

// upstream is a loopback HTTP server that serves documents at the paths of
// docs and records every other request.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

func newUpstream(t *testing.T, docs map[string][]byte) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if doc, ok := docs[r.URL.Path]; ok {
			w.Write(bytes.ReplaceAll(doc, []byte("PORT"), []byte(u.port())))
			return
		}
		body, _ := io.ReadAll(r.Body)
		u.mu.Lock()
		u.hits = append(u.hits, hit{r.Method, r.RequestURI, r.Header.Clone(), body})
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) port() string { return u.URL[strings.LastIndexByte(u.URL, ':')+1:] }

// last returns the last request received and forgets them all.
func (u *upstream) last(t *testing.T) hit {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.hits) != 1 {
		t.Fatalf("upstream got %d requests, want 1", len(u.hits))
	}
	h := u.hits[0]
	u.hits = nil
	return h
}

// request is what the document says an operation's call must send.
type request struct {
	args   string // the LLM's arguments
	method string
	uri    string
	header map[string]string // "" means absent
	body   string            // exact bytes (multipart: parts instead)
	parts  []part
}

type part struct{ name, filename, contentType, content string }

// TestFidelity serves a document over HTTP, imports it, executes every
// imported plugin through the real executor with flat LLM-style
// arguments and checks that the upstream received exactly the request
// the document describes.
func TestFidelity(t *testing.T) {
	src, err := os.ReadFile("testdata/fidelity.yaml")
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t, map[string][]byte{"/openapi.yaml": src})
	client := egresstest.Client(t)
	ctx := context.Background()
	docURL := up.URL + "/openapi.yaml"
	data, err := Fetch(ctx, client, docURL)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Load(data, docURL)
	if err != nil {
		t.Fatal(err)
	}
	ops, failures, err := Convert(doc, Options{SourceURL: docURL})
	if err != nil || len(failures) > 0 {
		t.Fatalf("Convert: %v %v", failures, err)
	}
	creds := map[string]string{
		"PET_STORE_FIDELITY_APIKEYHEADER": "key-h",
		"PET_STORE_FIDELITY_APIKEYQUERY":  "key q",
		"PET_STORE_FIDELITY_APIKEYCOOKIE": "c00kie",
		"PET_STORE_FIDELITY_BEARERAUTH":   "tok-1",
	}
	want := map[string]request{
		"GET /pets/{petId}/photos/{photo-id}": {
			args: `{"petId": 7, "photo-id": "a b/c", "tags": ["x", "y z"], "ids": [1, 2], "colors": ["red", "blue"],
				"sizes": ["S", "M"], "filter": {"min": 1, "max": 5}, "q": "hello world", "X-Request-ID": "req-1",
				"session": "s1", "query_id": "qi", "header_id": "hi"}`,
			method: "GET",
			uri:    "/api/v2/pets/7/photos/a%20b%2Fc?colors=red|blue&filter[max]=5&filter[min]=1&format=json&ids=1,2&q=hello%20world&id=qi&sizes=S%20M&tags=x&tags=y%20z",
			header: map[string]string{"X-Request-Id": "req-1", "Id": "hi", "Cookie": "session=s1", "X-Api-Key": "key-h", "Authorization": ""},
		},
		"POST /pets": {
			args:   `{"name": "shelter A", "body_name": "Rex", "owner": {"name": "Ann", "address": {"city": "Oslo"}}, "children": [{"name": "Pup", "kind": "pet"}]}`,
			method: "POST",
			uri:    "/api/v2/pets?name=shelter%20A",
			header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer tok-1", "X-Api-Key": ""},
			body:   `{"children":[{"kind":"pet","name":"Pup"}],"kind":"pet","name":"Rex","owner":{"address":{"city":"Oslo"},"name":"Ann"}}`,
		},
		"POST /pets/batch": {
			args:   `{"body": [{"name": "A", "kind": "pet"}]}`,
			method: "POST",
			uri:    "/api/v2/pets/batch",
			header: map[string]string{"Content-Type": "application/json", "Authorization": "Bearer tok-1"},
			body:   `[{"kind":"pet","name":"A"}]`,
		},
		"PUT /pets/{petId}": {
			args:   `{"petId": "p 1", "name": "Rex", "tags": ["a", "b"], "meta": {"color": "brown", "age": 3}}`,
			method: "PUT",
			uri:    "/api/v2/pets/p%201?api_key=key+q",
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "X-Api-Key": ""},
			// meta is encoded deepObject (the document's encoding says so);
			// tags has OpenAPI's default for form bodies: form, exploded.
			body: "meta[age]=3&meta[color]=brown&name=Rex&tags=a&tags=b",
		},
		"DELETE /pets/{petId}": {
			args:   `{"petId": "42"}`,
			method: "DELETE",
			uri:    "/api/v2/pets/42",
			header: map[string]string{"X-Api-Key": "", "Authorization": "", "Cookie": ""},
		},
		"POST /files": {
			args:   `{"file": "hello file", "note": "n1"}`,
			method: "POST",
			uri:    "/uploads/files",
			header: map[string]string{"Cookie": "sid=c00kie", "X-Api-Key": ""},
			parts: []part{
				{name: "file", filename: "file", contentType: "text/plain", content: "hello file"},
				{name: "note", content: "n1"},
			},
		},
		"GET /search": {
			args:   `{"filter": {"kind": "pet", "max": 5}, "X-Trace": {"id": "t 1"}}`,
			method: "GET",
			uri:    "/api/v2/search?filter=%7B%22kind%22%3A%22pet%22%2C%22max%22%3A5%7D",
			header: map[string]string{"X-Trace": `{"id":"t 1"}`, "X-Api-Key": "key-h"},
		},
		"POST /notes": {
			args:   `{"body": "just text"}`,
			method: "POST",
			uri:    "/api/v2/notes",
			header: map[string]string{"Content-Type": "text/plain", "X-Api-Key": "key-h"},
			body:   "just text",
		},
	}

	exec := engine.NewExecutor(client)
	var keys []string
	for _, op := range ops {
		keys = append(keys, op.Key)
		t.Run(op.Plugin.Name, func(t *testing.T) {
			w, ok := want[op.Key]
			if !ok {
				t.Fatalf("no expected request for %s", op.Key)
			}
			res, err := exec.Execute(ctx, engine.Call{Plugin: op.Plugin, Arguments: json.RawMessage(w.args), Credentials: creds})
			if err != nil || !res.OK {
				t.Fatalf("Execute: %v %+v", err, res.Error)
			}
			got := up.last(t)
			var diffs []string
			check := func(what, got, want string) {
				if got != want {
					diffs = append(diffs, what+":\n got "+got+"\nwant "+want)
				}
			}
			check("method", got.Method, w.method)
			check("request URI", got.RequestURI, w.uri)
			for k, v := range w.header {
				check("header "+k, got.Header.Get(k), v)
			}
			if w.parts != nil {
				check("multipart parts", partsOf(t, got), strings.Join(partStrings(w.parts), "\n"))
			} else {
				check("body", string(got.Body), w.body)
			}
			if len(diffs) > 0 {
				t.Errorf("%s:\n%s", op.Key, strings.Join(diffs, "\n"))
			}
		})
	}
	for k := range want {
		if !slices.Contains(keys, k) {
			t.Errorf("operation %s was not imported", k)
		}
	}
}

func partStrings(parts []part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, strings.Join([]string{p.name, p.filename, p.contentType, p.content}, "|"))
	}
	return out
}

// partsOf decodes a multipart body into partStrings form.
func partsOf(t *testing.T, h hit) string {
	mt, params, err := mime.ParseMediaType(h.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return "Content-Type " + h.Header.Get("Content-Type")
	}
	r := multipart.NewReader(bytes.NewReader(h.Body), params["boundary"])
	var parts []part
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		b, _ := io.ReadAll(p)
		parts = append(parts, part{p.FormName(), p.FileName(), p.Header.Get("Content-Type"), string(b)})
	}
	return strings.Join(partStrings(parts), "\n")
}
