package api_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/internal/corpus"
	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// TestImportProgress: an import asking for progress streams NDJSON lines
// (each valid JSON, phases in order, done rising to total) and ends with
// the object it answers without progress; without asking, the answer is
// the usual one.
func TestImportProgress(t *testing.T) {
	doc := corpus.Read(t, "stripe/spec3.2022-04-12.e0123a38.json.gz") // 417 operations
	testdb.Each(t, func(t *testing.T, st *store.Store) {
		e := newEnv(t, st)
		post := func(query string, header ...string) (int, string, []byte) {
			t.Helper()
			req, _ := http.NewRequest("POST", e.url+"/v1/plugins/import/openapi?prefix=st&"+query, bytes.NewReader(doc))
			req.Header.Set("Authorization", "Bearer "+adminToken)
			req.Header.Set("Content-Type", "application/vnd.oai.openapi+json")
			for i := 0; i+1 < len(header); i += 2 {
				req.Header.Set(header[i], header[i+1])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, resp.Header.Get("Content-Type"), body
		}
		// lines checks a streamed answer and returns its last line.
		lines := func(body []byte) (final map[string]any, totals map[string]int) {
			t.Helper()
			phases := []string{openapi.PhaseFetched, openapi.PhaseParsed, openapi.PhaseConverting, openapi.PhaseWriting}
			totals = map[string]int{}
			last := openapi.Progress{}
			sc := bufio.NewScanner(bytes.NewReader(body))
			sc.Buffer(nil, 16<<20)
			var all []string
			for sc.Scan() {
				all = append(all, sc.Text())
			}
			if len(all) < 5 {
				t.Fatalf("%d lines: %s", len(all), body)
			}
			for _, l := range all[:len(all)-1] {
				var p openapi.Progress
				dec := json.NewDecoder(strings.NewReader(l))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&p); err != nil {
					t.Fatalf("progress line %q: %v", l, err)
				}
				i, j := slices.Index(phases, last.Phase), slices.Index(phases, p.Phase)
				if j < 0 || j < i || j == i && p.Done < last.Done || p.Done > p.Total {
					t.Fatalf("progress %+v after %+v", p, last)
				}
				last, totals[p.Phase] = p, p.Done
			}
			if err := json.Unmarshal([]byte(all[len(all)-1]), &final); err != nil {
				t.Fatalf("last line: %v", err)
			}
			return final, totals
		}

		code, ct, plain := post("dry_run=true")
		var want map[string]any
		if err := json.Unmarshal(plain, &want); code != http.StatusOK || !strings.HasPrefix(ct, "application/json") || err != nil {
			t.Fatalf("dry run without progress: %d %s %v", code, ct, err)
		}
		added := count(want["added"])
		if added < 400 {
			t.Fatalf("the dry run adds %d plugins", added)
		}

		code, ct, streamed := post("dry_run=true", "Accept", "application/x-ndjson")
		if code != http.StatusOK || !strings.HasPrefix(ct, "application/x-ndjson") {
			t.Fatalf("dry run with progress: %d %s", code, ct)
		}
		final, totals := lines(streamed)
		if !reflect.DeepEqual(final, want) {
			t.Errorf("the streamed dry run ends with\n%v\nwithout progress it is\n%v", final, want)
		}
		if totals[openapi.PhaseFetched] != len(doc) || totals[openapi.PhaseConverting] != 417 || totals[openapi.PhaseWriting] != added {
			t.Errorf("the phases' last lines: %v", totals)
		}

		code, _, streamed = post("progress=true")
		final, totals = lines(streamed)
		if code != http.StatusOK || final["dry_run"] != false || !reflect.DeepEqual(final["added"], want["added"]) || totals[openapi.PhaseWriting] != added {
			t.Fatalf("apply with progress: %d, %v, ends with %.300v", code, totals, final)
		}
		if n := count(e.list(t)); n != added {
			t.Errorf("%d plugins written, %d announced", n, added)
		}

		// A failure once streaming: the last line is the error.
		code, _, streamed = post("progress=true&base_url=ftp://nowhere")
		if final = lastLine(t, streamed); code != http.StatusOK || final["error"] == nil {
			t.Errorf("a failed streamed import: %d, ends with %v", code, final)
		}
	})
}

// lastLine decodes the last line of an NDJSON answer.
func lastLine(t *testing.T, body []byte) map[string]any {
	t.Helper()
	all := strings.Split(strings.TrimSpace(string(body)), "\n")
	var out map[string]any
	if err := json.Unmarshal([]byte(all[len(all)-1]), &out); err != nil {
		t.Fatalf("last line %q: %v", all[len(all)-1], err)
	}
	return out
}

func (e *env) list(t *testing.T) any {
	t.Helper()
	code, res := e.do("GET", "/v1/plugins", adminToken, nil)
	if code != http.StatusOK {
		t.Fatalf("list plugins: %d %v", code, res)
	}
	return res["plugins"]
}
