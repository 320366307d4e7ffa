package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/encoding/unicode/utf32"

	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/internal/logbuf"
)

// echoedForms are what the fuzzed upstream writes of each value it got,
// inside JSON strings: as encoding/json does, as PHP does (\/ and \u for
// non-ASCII), all \u in upper case, URL-escaped, in base64.
func echoedForms(v string) []string {
	goJSON, _ := json.Marshal(v)
	var php, allU strings.Builder
	for _, r := range v {
		switch {
		case r == '/':
			php.WriteString(`\/`)
		case r == '"' || r == '\\':
			php.WriteString(`\` + string(r))
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&php, `\u%04x`, u)
			}
		default:
			php.WriteRune(r)
		}
	}
	for _, u := range utf16.Encode([]rune(v)) {
		fmt.Fprintf(&allU, `\u%04X`, u)
	}
	var dec, hex strings.Builder
	for _, r := range v {
		fmt.Fprintf(&dec, "&#%d;", r)
		fmt.Fprintf(&hex, "&#x%x;", r)
	}
	return []string{string(goJSON[1 : len(goJSON)-1]), php.String(), allU.String(), url.QueryEscape(v),
		base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)), dec.String(), hex.String()}
}

// echoEncodings are the text encodings the fuzzed upstream answers in,
// each declared another way: a charset, a byte-order mark, nothing (read
// from the first bytes), and UTF-16 after a UTF-8 start that no decoding
// reads (the masker finds the wide forms in the raw bytes).
var echoEncodings = []struct {
	name, contentType string
	bom               []byte
	enc               encoding.Encoding // nil: UTF-8
	utf8Start         bool
}{
	{"utf-8", "application/json", nil, nil, false},
	{"utf-16le declared", "application/json; charset=utf-16le", nil, unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), false},
	{"utf-16be by its BOM", "application/json", []byte{0xFE, 0xFF}, unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM), false},
	{"utf-32le undeclared", "application/json", nil, utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), false},
	{"utf-32be declared text", "text/plain; charset=utf-32be", nil, utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM), false},
	{"utf-16le after a UTF-8 start", "application/json; charset=utf-8", nil, unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), true},
}

// wideForms returns s in UTF-8 and in the byte forms of UTF-16 and UTF-32.
func wideForms(s string) []string {
	out := []string{s}
	for _, enc := range []encoding.Encoding{unicode.UTF16(unicode.LittleEndian, unicode.IgnoreBOM), unicode.UTF16(unicode.BigEndian, unicode.IgnoreBOM),
		utf32.UTF32(utf32.LittleEndian, utf32.IgnoreBOM), utf32.UTF32(utf32.BigEndian, utf32.IgnoreBOM)} {
		if w, err := enc.NewEncoder().String(s); err == nil {
			out = append(out, w)
		}
	}
	return out
}

// FuzzEchoedSecret runs calls against a loopback upstream that echoes the
// fuzzed secrets it receives (an API key header, a basic-auth password and
// the whole Authorization header) in every form of echoedForms, in a
// success and in an error, in each of echoEncodings, and finds no form of
// them, in UTF-8 or a wide byte form, in what the LLM gets (the output,
// the error), in the execution records or in the logs. The basic-auth
// username, an identifier, stays readable where the answer decodes.
func FuzzEchoedSecret(f *testing.F) {
	for _, s := range []string{"sk/live/0123456789", "pässwörd/中文😀", `a"b\c<d>&e`, "abcd", "x+y=z/w%41", "\u2028line sep"} {
		f.Add(s)
	}
	up := newUpstream(f, func(w http.ResponseWriter, r *http.Request) {
		_, pass, _ := r.BasicAuth()
		var forms []string
		for _, v := range []string{r.Header.Get("X-Key"), pass, r.Header.Get("Authorization")} {
			for _, form := range echoedForms(v) {
				forms = append(forms, `"`+form+`"`)
			}
		}
		e := echoEncodings[0]
		for _, c := range echoEncodings {
			if c.name == r.URL.Query().Get("enc") {
				e = c
			}
		}
		w.Header().Set("Content-Type", e.contentType)
		if r.URL.Query().Get("fail") != "" {
			w.WriteHeader(http.StatusBadRequest)
		}
		body := fmt.Sprintf(`{"approved_by":"approver","echo":[%s]}`, strings.Join(forms, ","))
		if e.enc != nil {
			body, _ = e.enc.NewEncoder().String(body)
		}
		if e.utf8Start {
			body = `{"note":"` + body + `"}`
		}
		w.Write(append(e.bom, body...))
	})
	p := mustPlugin(f, `{"name":"t","description":"d","parameters":{"type":"object","properties":{"fail":{"type":"string"},"enc":{"type":"string"}}},
	  "execution":{"method":"GET","base_url":"%s/echo","retry":{"max_attempts":1}},
	  "auth_config":{"type":"basic","username":"U","password":"P","mapping":[{"source":"KEY","target":"X-Key"}]}}`, up.URL)
	f.Fuzz(func(t *testing.T, secret string) {
		if len(secret) < 4 || !utf8.ValidString(secret) || strings.ContainsFunc(secret, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Skip() // not a credential that can go in a header
		}
		pass := secret + "-pw"
		h := newHarness(t)
		logs := &logbuf.Buffer{}
		h.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		creds := map[string]string{"U": "approver", "P": pass, "KEY": secret}
		var seen []string // every string the LLM, a caller, a record or a log gets
		for _, e := range echoEncodings {
			for _, fail := range []string{"", "1"} {
				args, _ := json.Marshal(map[string]string{"fail": fail, "enc": e.name})
				res, err := h.call(t, p, string(args), creds)
				if err != nil {
					t.Fatalf("%v", err)
				}
				seen = appendStrings(seen, res.Output)
				if !e.utf8Start { // its NULs are \u0000 in the JSON: "0000" may be a secret
					seen = append(seen, string(res.Output))
				}
				// Unless a form of a secret happens to match text around it
				// (a secret of quotes, a base64 form inside "approver").
				if fail == "" && !e.utf8Start && !bytes.Contains(res.Output, []byte("approver")) && !masksContext(secret, pass) {
					t.Errorf("%s: the username is masked: %s", e.name, res.Output)
				}
				if res.Error != nil {
					seen = append(seen, res.Error.Message)
					seen = appendStrings(seen, res.Error.Details)
				}
			}
		}
		for _, rec := range h.flush(t) {
			seen = append(seen, rec.ErrorMessage)
		}
		for line := range strings.Lines(logs.String()) {
			var v map[string]any
			json.Unmarshal([]byte(line), &v)
			delete(v, "time") // the clock's and the engine's own ids: "0000" may be a secret
			delete(v, "execution_id")
			seen = appendStrings(seen, v)
		}
		for _, v := range []string{secret, pass} {
			for _, form := range append(echoedForms(v), v) {
				for _, wf := range wideForms(form) {
					for _, s := range seen {
						if strings.Contains(s, wf) {
							t.Fatalf("%q got through as %q in %q", v, wf, s)
						}
					}
				}
			}
		}
	})
}

// masksContext reports whether the secrets' own forms match the text
// around the username.
func masksContext(secrets ...string) bool {
	const context = `{"approved_by":"approver","echo":["`
	return auth.NewMasker(secrets...).String(context) != context
}

// appendStrings appends every string inside v, a JSON-like value, as
// decoded text.
func appendStrings(out []string, v any) []string {
	if b, err := json.Marshal(v); err == nil {
		var decoded any
		if json.Unmarshal(b, &decoded) == nil {
			v = decoded
		}
	}
	switch t := v.(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, e := range t {
			out = appendStrings(out, e)
		}
	case map[string]any:
		for _, e := range t {
			out = appendStrings(out, e)
		}
	}
	return out
}
