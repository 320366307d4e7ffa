package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"slices"
	"strings"
	"testing"
)

// Issue 3, point 1: an invalid call sends nothing and names each bad
// field and what was expected.
func TestInvalidArgumentsSendNothing(t *testing.T) {
	const doc = `{"name":"search","description":"d",
	 "parameters":{"type":"object","properties":{
	   "keyword":{"type":"string"},
	   "page":{"type":"integer","minimum":1},
	   "sort":{"type":"string","enum":["asc","desc"]},
	   "tag":{"type":"string","nullable":true},
	   "code":{"type":"string","pattern":"^[0-9]+$"},
	   "mail":{"type":"string","format":"email"},
	   "mode":{"const":"fast"}},
	  "required":["keyword"]},
	 "execution":{"method":"GET","base_url":"%s/search"}}`
	tests := []struct {
		name string
		args string
		want []string // substrings of the message
	}{
		{"wrong type", `{"keyword":42}`, []string{"invalid arguments: keyword must be a string, not a number"}},
		{"missing required", `{}`, []string{"keyword is required"}},
		{"several fields", `{"keyword":"x","page":0,"sort":"up"}`, []string{`page must be at least 1; sort must be one of "asc", "desc"`}},
		// Issue 17, point 5: an undeclared argument is named, not dropped.
		{"unknown argument", `{"keyword":"x","bogus":1,"Authorization":"Bearer forged"}`, []string{
			"Authorization is not a known argument (the known ones are code, keyword, mail, mode, page, sort, tag)",
			"bogus is not a known argument"}},
		// Issue 17, point 9: the message (and so the record) quotes no value.
		{"values not quoted", `{"keyword":"x","code":"secret-code-value","mail":"secret-mail-value","mode":"secret-mode-value"}`, []string{
			"code must match the pattern ^[0-9]+$", `mode must be "fast"`}},
		{"not JSON", `{"keyword":`, []string{"not valid JSON"}},
		{"trailing text", `{"keyword":"x"} {}`, []string{"not valid JSON"}},
		{"not an object", `["x"]`, []string{"the field arguments must be a JSON object, or a string holding one; got an array"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, nil)
			h := newHarness(t)
			res, err := h.call(t, mustPlugin(t, doc, up.URL), tt.args, nil)
			var refused *RefusedError
			if !errors.As(err, &refused) {
				t.Fatalf("err = %v, want a *RefusedError", err)
			}
			if res == nil || res.OK || res.Error == nil || res.Error.Code != CodeInvalidArguments || refused.Code != CodeInvalidArguments {
				t.Fatalf("result = %s", resultJSON(t, res))
			}
			for _, w := range tt.want {
				if !strings.Contains(res.Error.Message, w) {
					t.Errorf("message %q does not contain %q", res.Error.Message, w)
				}
			}
			if n := len(up.Hits()); n != 0 {
				t.Fatalf("an invalid call sent %d requests", n)
			}
			recs := h.flush(t)
			if len(recs) != 1 || recs[0].Status != StatusRefused || recs[0].ErrorClass != CodeInvalidArguments {
				t.Fatalf("records = %+v", recs)
			}
			if strings.Contains(recs[0].ErrorMessage, "secret") || strings.Contains(res.Error.Message, "secret") {
				t.Errorf("an argument's value is quoted: %q", recs[0].ErrorMessage)
			}
		})
	}

	t.Run("nullable accepts null", func(t *testing.T) {
		up := newUpstream(t, nil)
		h := newHarness(t)
		res, err := h.call(t, mustPlugin(t, doc, up.URL), `{"keyword":"x","tag":null}`, nil)
		if err != nil || !res.OK {
			t.Fatalf("%v %s", err, resultJSON(t, res))
		}
		if got := up.last(t).RequestURI; got != "/search?keyword=x" {
			t.Fatalf("null argument sent: %s", got)
		}
	})
}

// TestUnknownArgumentClosedSchema: with additionalProperties false, an
// unknown argument is said once, with the known ones.
func TestUnknownArgumentClosedSchema(t *testing.T) {
	up := newUpstream(t, nil)
	h := newHarness(t)
	p := mustPlugin(t, `{"name":"t","description":"d",
	 "parameters":{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":false},
	 "execution":{"method":"GET","base_url":"%s/c"}}`, up.URL)
	res, err := h.call(t, p, `{"q":"x","bogus":1}`, nil)
	if err == nil || res.Error == nil || res.Error.Message != "invalid arguments: bogus is not a known argument (the known ones are q)" {
		t.Fatalf("%v %s", err, resultJSON(t, res))
	}
}

// Issue 3, point 2: every argument lands where the plugin says, escaped
// for that place; asserted on the raw request the server received.
func TestPlacement(t *testing.T) {
	tests := []struct {
		name  string
		doc   string // %s is the upstream's URL
		args  string
		fixed map[string]any
		check func(t *testing.T, h hit)
	}{
		// Path: each value is exactly one segment.
		{"path slash", pathDoc, `{"id":"a/b"}`, nil, uri("/users/a%2Fb/repos")},
		{"path escaped slash stays literal", pathDoc, `{"id":"%2F"}`, nil, uri("/users/%252F/repos")},
		{"path space", pathDoc, `{"id":"a b"}`, nil, uri("/users/a%20b/repos")},
		{"path unicode", pathDoc, `{"id":"字节"}`, nil, uri("/users/%E5%AD%97%E8%8A%82/repos")},
		{"path dots inside", pathDoc, `{"id":"v1.2...3"}`, nil, uri("/users/v1.2...3/repos")},
		{"path number", pathDoc, `{"id":12345678901234567890}`, nil, uri("/users/12345678901234567890/repos")},

		// Query, per OpenAPI style and explode.
		{"query form explode", queryDoc(`{"in":"query"}`), `{"a":[1,2]}`, nil, uri("/q?a=1&a=2")},
		{"query form no explode", queryDoc(`{"in":"query","explode":false}`), `{"a":[1,2]}`, nil, uri("/q?a=1,2")},
		{"query spaceDelimited", queryDoc(`{"in":"query","style":"spaceDelimited"}`), `{"a":[1,2]}`, nil, uri("/q?a=1%202")},
		{"query pipeDelimited", queryDoc(`{"in":"query","style":"pipeDelimited"}`), `{"a":[1,2]}`, nil, uri("/q?a=1|2")},
		{"query object form explode", queryDoc(`{"in":"query"}`), `{"a":{"k":"v","k2":"v2"}}`, nil, uri("/q?k=v&k2=v2")},
		{"query object form no explode", queryDoc(`{"in":"query","explode":false}`), `{"a":{"k":"v","k2":"v2"}}`, nil, uri("/q?a=k,v,k2,v2")},
		{"query deepObject", queryDoc(`{"in":"query","style":"deepObject"}`), `{"a":{"k":"v","n":{"x":1}}}`, nil, uri("/q?a[k]=v&a[n][x]=1")},
		{"query deepObject array (Stripe's expand)", queryDoc(`{"in":"query","style":"deepObject","explode":true}`), `{"a":["x",{"k":"v"}]}`, nil, uri("/q?a[0]=x&a[1][k]=v")},
		{"query as JSON content", queryDoc(`{"in":"query","content_type":"application/json"}`), `{"a":{"k":"v w"}}`, nil, uri("/q?a=%7B%22k%22%3A%22v%20w%22%7D")},
		{"query escaping", queryDoc(`{"in":"query","name":"the q"}`), `{"a":"x&y=z +/字"}`, nil, uri("/q?the%20q=x%26y%3Dz%20%2B%2F%E5%AD%97")},
		{"query comma in item", queryDoc(`{"in":"query","explode":false}`), `{"a":["x,y","z"]}`, nil, uri("/q?a=x%2Cy,z")},

		// Static query and headers from the execution config.
		{"static query and headers", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"q":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/s?v=1","query":{"format":"json"},"headers":{"X-Static":"yes"}}}`,
			`{"q":"go"}`, nil, func(t *testing.T, h hit) {
				uri("/s?v=1&format=json&q=go")(t, h)
				header("X-Static", "yes")(t, h)
			}},

		// Headers and cookies.
		{"header array and object", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"tags":{"type":"array"},"meta":{"type":"object"},"id":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/h","param_placement":{"tags":{"in":"header","name":"X-Tags"},"meta":{"in":"header","name":"X-Meta"},"id":{"in":"header","name":"X-Request-Id"}}}}`,
			`{"tags":["a","b"],"meta":{"k":"v","k2":"v2"},"id":"r-1"}`, nil, func(t *testing.T, h hit) {
				header("X-Tags", "a,b")(t, h)
				header("X-Meta", "k,v,k2,v2")(t, h)
				header("X-Request-Id", "r-1")(t, h)
			}},
		{"cookie", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"session":{"type":"string"},"lang":{"type":"string"}}},
		  "execution":{"method":"GET","base_url":"%s/c","param_placement":"cookie"}}`,
			`{"session":"a;b=c d/字","lang":"zh"}`, nil, header("Cookie", "lang=zh; session=a%3Bb=c%20d/%E5%AD%97")},

		// Bodies.
		{"json object", bodyDoc("application/json", `"body"`), `{"a":1,"b":"x<y"}`, nil, body("application/json", `{"a":1,"b":"x<y"}`)},
		{"json array root", wholeDoc("application/json", `{"type":"array","items":{"type":"integer"}}`), `{"v":[1,2,3]}`, nil, body("application/json", `[1,2,3]`)},
		{"json primitive", wholeDoc("application/json", `{"type":"string"}`), `{"v":"hello"}`, nil, body("application/json", `"hello"`)},
		{"form nested stripe-style", bodyDoc("application/x-www-form-urlencoded", `"body"`),
			`{"a":"x y","b":{"metadata":{"k":"v"},"items":[{"price":"p_1"}],"expand":["e1","e2"]}}`, nil,
			body("application/x-www-form-urlencoded", `a=x+y&b[expand][0]=e1&b[expand][1]=e2&b[items][0][price]=p_1&b[metadata][k]=v`)},
		{"text plain", wholeDoc("text/plain", `{"type":"string"}`), `{"v":"just text\nline 2"}`, nil, body("text/plain", "just text\nline 2")},
		{"raw other type", wholeDoc("application/xml", `{"type":"string"}`), `{"v":"<a/>"}`, nil, body("application/xml", "<a/>")},
		{"multipart", multipartDoc, `{"title":"report","count":3,"note":"hello file","blob":"AAECAw=="}`, nil, checkMultipart},
		// Issue 17, point 3: a list of files is one file part each, named
		// as the LLM said, typed by the name or the encoding.
		{"multipart file lists", multipartListDoc,
			`{"files":["plain text",{"content":"{}","filename":"a.json"},{"content":"x","filename":"b.bin","content_type":"text/x-custom"}],
			  "pics":[{"content":"iVBORw==","filename":"p.png"}],"tags":["a","b"],"meta":{"k":"v"}}`, nil, checkMultipartList},

		// fixed_params: merged over the LLM's, the call's filling what the
		// plugin's leave open.
		{"fixed params", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"q":{"type":"string"},"tenant":{"type":"string"},"region":{"type":"string"}},"required":["tenant"]},
		  "fixed_params":{"region":"eu"},
		  "execution":{"method":"GET","base_url":"%s/f"}}`,
			`{"q":"x","tenant":"llm-tenant"}`, map[string]any{"tenant": "payload-tenant"}, uri("/f?q=x&region=eu&tenant=payload-tenant")},
		// Issue 17, point 4: schema defaults describe what the API does
		// without the value; they are not sent, nested ones neither.
		{"defaults are not sent", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"q":{"type":"string"},"page":{"type":"integer","default":1}}},
		  "execution":{"method":"GET","base_url":"%s/d"}}`, `{"q":"x"}`, nil, uri("/d?q=x")},
		{"nested defaults", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"page":{"type":"integer","default":1},
		    "filter":{"type":"object","properties":{"size":{"type":"integer","default":10},"q":{"type":"string"}}}}},
		  "execution":{"method":"GET","base_url":"%s/d","param_placement":{"filter":{"in":"query","style":"deepObject"}}}}`,
			`{"filter":{"q":"x"},"page":3}`, nil, uri("/d?filter[q]=x&page=3")},
		{"explicit additionalProperties passes extras through", `{"name":"t","description":"d",
		  "parameters":{"type":"object","properties":{"q":{"type":"string"}},"additionalProperties":{"type":"string"}},
		  "execution":{"method":"GET","base_url":"%s/u"}}`,
			`{"q":"x","extra":"y"}`, nil, uri("/u?extra=y&q=x")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t, nil)
			h := newHarness(t)
			res, err := h.Execute(context.Background(), Call{
				Plugin: mustPlugin(t, tt.doc, up.URL), Arguments: json.RawMessage(tt.args), FixedParams: tt.fixed,
			})
			if err != nil || !res.OK {
				t.Fatalf("%v %s", err, resultJSON(t, res))
			}
			tt.check(t, up.last(t))
		})
	}
}

const pathDoc = `{"name":"t","description":"d",
 "parameters":{"type":"object","properties":{"id":{"type":["string","integer"]}},"required":["id"]},
 "execution":{"method":"GET","base_url":"%s/users/{id}/repos"}}`

func queryDoc(placement string) string {
	return `{"name":"t","description":"d",
	 "parameters":{"type":"object","properties":{"a":{}}},
	 "execution":{"method":"GET","base_url":"%s/q","param_placement":{"a":` + placement + `}}}`
}

func bodyDoc(ct, placement string) string {
	return `{"name":"t","description":"d",
	 "parameters":{"type":"object","properties":{"a":{},"b":{}}},
	 "execution":{"method":"POST","base_url":"%s/b","content_type":"` + ct + `","param_placement":` + placement + `}}`
}

func wholeDoc(ct, schema string) string {
	return `{"name":"t","description":"d",
	 "parameters":{"type":"object","properties":{"v":` + schema + `}},
	 "execution":{"method":"POST","base_url":"%s/b","content_type":"` + ct + `","param_placement":{"v":{"in":"body","name":"$"}}}}`
}

const multipartDoc = `{"name":"t","description":"d",
 "parameters":{"type":"object","properties":{
   "title":{"type":"string"},"count":{"type":"integer"},
   "note":{"type":"string","description":"the file's text"},
   "blob":{"type":"string","contentEncoding":"base64"}}},
 "execution":{"method":"POST","base_url":"%s/upload","content_type":"multipart/form-data",
   "param_placement":{"note":{"in":"body","name":"file","filename":"note.txt","content_type":"text/plain"}}}}`

func checkMultipart(t *testing.T, h hit) {
	mt, params, err := mime.ParseMediaType(h.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		t.Fatalf("Content-Type %q", h.Header.Get("Content-Type"))
	}
	type part struct{ filename, ct, data string }
	parts := map[string]part{}
	r := multipart.NewReader(bytes.NewReader(h.Body), params["boundary"])
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		parts[p.FormName()] = part{p.FileName(), p.Header.Get("Content-Type"), string(data)}
	}
	want := map[string]part{
		"title": {"", "", "report"},
		"count": {"", "", "3"},
		"file":  {"note.txt", "text/plain", "hello file"},
		"blob":  {"blob", "application/octet-stream", "\x00\x01\x02\x03"},
	}
	if len(parts) != len(want) {
		t.Fatalf("parts = %+v", parts)
	}
	for name, w := range want {
		if parts[name] != w {
			t.Errorf("part %s = %+v, want %+v", name, parts[name], w)
		}
	}
}

const multipartListDoc = `{"name":"t","description":"d",
 "parameters":{"type":"object","properties":{
   "files":{"type":"array","items":{"format":"binary"}},
   "pics":{"type":"array","items":{"format":"byte"}},
   "tags":{"type":"array","items":{"type":"string"}},
   "meta":{"type":"object"}}},
 "execution":{"method":"POST","base_url":"%s/upload","content_type":"multipart/form-data",
   "param_placement":{"pics":{"in":"body","content_type":"image/*"},"meta":{"in":"body","content_type":"application/json"}}}}`

func checkMultipartList(t *testing.T, h hit) {
	_, params, _ := mime.ParseMediaType(h.Header.Get("Content-Type"))
	r := multipart.NewReader(bytes.NewReader(h.Body), params["boundary"])
	var got []string
	for {
		p, err := r.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(p)
		got = append(got, fmt.Sprintf("%s|%s|%s|%q", p.FormName(), p.FileName(), p.Header.Get("Content-Type"), data))
	}
	want := []string{
		`files|files|application/octet-stream|"plain text"`,
		`files|a.json|application/json|"{}"`,
		`files|b.bin|text/x-custom|"x"`,
		// A typed part that is no file has no filename (review 69).
		`meta||application/json|"{\"k\":\"v\"}"`,
		`pics|p.png|image/png|"\x89PNG"`,
		`tags|||"a"`,
		`tags|||"b"`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("parts\n got %q\nwant %q", got, want)
	}
}

func uri(want string) func(*testing.T, hit) {
	return func(t *testing.T, h hit) {
		t.Helper()
		if h.RequestURI != want {
			t.Errorf("request URI = %s, want %s", h.RequestURI, want)
		}
	}
}

func header(name, want string) func(*testing.T, hit) {
	return func(t *testing.T, h hit) {
		t.Helper()
		if got := strings.Join(h.Header.Values(name), "|"); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
}

func body(ct, want string) func(*testing.T, hit) {
	return func(t *testing.T, h hit) {
		t.Helper()
		if got := h.Header.Get("Content-Type"); got != ct {
			t.Errorf("Content-Type = %q, want %q", got, ct)
		}
		if string(h.Body) != want {
			t.Errorf("body = %q, want %q", h.Body, want)
		}
	}
}
