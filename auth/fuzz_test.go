package auth_test

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/blindexec/blindexec/auth"
)

// unmasked reports whether secret is still in got once every Redacted is
// taken out (a NUL in its place: the marker's own letters never make up
// a secret with the text around it).
func unmasked(got, secret string) bool {
	return strings.Contains(strings.ReplaceAll(got, auth.Redacted, "\x00"), secret)
}

// FuzzMaskerText: whatever text surrounds a secret, in each form an
// upstream may echo it, masking leaves no copy of the secret as it is
// (String, Bytes and Cut alike). FuzzMasker frames a secret in fixed
// brackets; here the text around it is the fuzzer's (a backslash or a
// percent sign before it, half an escape, another secret's start).
func FuzzMaskerText(f *testing.F) {
	for _, s := range [][3]string{
		{"sk/live/0123", `{"error":"bad key `, `"}`},
		{"abcd", `\`, `\u0041`},
		{"pa55word", "%", "%2"},
		{"é/中😀x", `"\u00`, `\`},
		{"abab", "ab", "ab"},
		{"AbCdEf0123/+=", "Bearer ", "=="},
	} {
		f.Add(s[0], s[1], s[2], uint8(0))
	}
	f.Fuzz(func(t *testing.T, secret, before, after string, form uint8) {
		if len(secret) < auth.MinMaskLen || !utf8.ValidString(secret) || strings.Contains(secret, "\x00") || len(before)+len(after) > 512 {
			t.Skip() // invalid UTF-8 is not a credential; NUL stands for the marker
		}
		m := auth.NewMasker(secret)
		in := before + secretForms[int(form)%len(secretForms)].enc(secret) + after
		for name, got := range map[string]string{"String": m.String(in), "Bytes": string(m.Bytes([]byte(in))), "Cut": m.Cut(in)} {
			if unmasked(got, secret) {
				t.Fatalf("%s(%q) = %q holds %q", name, in, got, secret)
			}
		}
	})
}

// FuzzEchoMasking: an answer echoing the API key a request carried is
// read without the key, whether read whole or as an event stream a line
// at a time, in reads of any size; the text besides is kept.
func FuzzEchoMasking(f *testing.F) {
	f.Add("sk-embed-0123456789", "data: {\"k\":\"", "\"}\n\ndata: [DONE]\n\n", true, uint8(1))
	f.Add("sk-embed-0123456789", `{"error":"bad key `, `"}`, false, uint8(3))
	f.Add("abcd", "data: ab", "cd\ndata: abcd\n", true, uint8(2))
	f.Fuzz(func(t *testing.T, key, before, after string, stream bool, chunk uint8) {
		// A header value holds no control characters: net/http refuses them.
		if len(key) < auth.MinMaskLen || !utf8.ValidString(key) || strings.ContainsFunc(key, func(r rune) bool { return r < ' ' || r == 0x7f }) || strings.TrimSpace(key) != key {
			t.Skip()
		}
		body := before + key + after
		req, _ := http.NewRequest(http.MethodGet, "http://upstream.test/", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp := &http.Response{Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		if stream {
			resp.Header.Set("Content-Type", "text/event-stream")
		}
		auth.MaskEcho(req, resp)
		var r io.Reader = resp.Body
		if chunk%4 != 0 {
			r = iotest.OneByteReader(r) // a reader of the body's bytes one at a time
		}
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if unmasked(string(got), key) {
			t.Fatalf("body %q read as %q", body, got)
		}
		if !stream {
			return
		}
		// Line by line: each line is the line alone masked.
		var want bytes.Buffer
		m := auth.NewMasker(key)
		lines := bufio.NewReader(strings.NewReader(body))
		for {
			line, err := lines.ReadBytes('\n')
			want.Write(m.Bytes(line))
			if err != nil {
				break
			}
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("stream %q read as %q, its lines masked are %q", body, got, want.Bytes())
		}
	})
}

// FuzzDecrypt: a stored credential the database hands over, whatever it
// holds, is opened or refused without panicking; the refusal never
// quotes the stored text; what opens opens for its own user and key
// only, and what Encrypt wrote opens to its value.
func FuzzDecrypt(f *testing.F) {
	const master = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=" // 32 bytes
	kr, err := auth.ParseKeyring(master, "")
	if err != nil {
		f.Fatal(err)
	}
	good, _, err := kr.Encrypt(7, "QCC_KEY", "s3cret-value")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, "s3cret-value")
	f.Add("v1:"+kr.MasterKeyID()+":AAAA", "x")
	f.Add("v1:zzzzzzzz:payload-text", "")
	f.Add("v2:"+kr.MasterKeyID()+":"+base64.StdEncoding.EncodeToString(make([]byte, 40)), "abc")
	f.Add("v1:"+kr.MasterKeyID()+":"+strings.Repeat("=", 30), "")
	f.Fuzz(func(t *testing.T, stored, value string) {
		_, err := kr.Decrypt(7, "QCC_KEY", stored)
		if err == nil {
			// What opens for its row opens for no other.
			if _, err := kr.Decrypt(8, "QCC_KEY", stored); err == nil {
				t.Fatalf("%q opened for another user", stored)
			}
			if _, err := kr.Decrypt(7, "QCC_KEY2", stored); err == nil {
				t.Fatalf("%q opened for another key", stored)
			}
		}
		if err != nil {
			// A corrupt row's text (its payload, a value copied where the
			// stored form belongs) stays out of logs and answers.
			if _, payload, ok := cutPayload(stored); ok && len(payload) >= 4 && strings.Contains(err.Error(), payload) {
				t.Fatalf("error %q quotes the stored text %q", err, stored)
			}
			if len(stored) >= 8 && !strings.HasPrefix(stored, "v1:") && strings.Contains(err.Error(), stored) {
				t.Fatalf("error %q quotes the stored text", err)
			}
		}
		if !utf8.ValidString(value) {
			return
		}
		enc, _, err := kr.Encrypt(7, "QCC_KEY", value)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := kr.Decrypt(7, "QCC_KEY", enc); err != nil || got != value {
			t.Fatalf("round trip of %q: %q, %v", value, got, err)
		}
		if _, err := kr.Decrypt(8, "QCC_KEY", enc); err == nil {
			t.Fatal("opened for another user")
		}
		if strings.Contains(enc, value) && len(value) >= 4 {
			t.Fatalf("stored %q holds the value %q", enc, value)
		}
	})
}

// cutPayload is the payload of "v1:<kid>:<payload>", read independently
// of the vault.
func cutPayload(stored string) (kid, payload string, ok bool) {
	parts := strings.SplitN(stored, ":", 3)
	if len(parts) != 3 {
		return "", "", false
	}
	return parts[1], parts[2], true
}

// FuzzParseKeyring: a master key setting, whatever it holds, is taken or
// refused without panicking, and a refusal never quotes the key (it is
// written to a log at start).
func FuzzParseKeyring(f *testing.F) {
	f.Add("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "")
	f.Add("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "not base64!,MDEy")
	f.Add("c2hvcnQ=", "")
	f.Add("", "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=")
	f.Add("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY", "")
	f.Fuzz(func(t *testing.T, master, old string) {
		kr, err := auth.ParseKeyring(master, old)
		if err == nil {
			if kr == nil {
				t.Fatal("no keyring and no error")
			}
			return
		}
		for _, k := range append(strings.Split(old, ","), master) {
			if k = strings.TrimSpace(k); len(k) >= 8 && strings.Contains(err.Error(), k) {
				t.Fatalf("error %q quotes a key %q", err, k)
			}
		}
		if errors.Is(err, auth.ErrNoMasterKey) {
			t.Fatalf("a malformed key read as none: %v", err)
		}
	})
}
