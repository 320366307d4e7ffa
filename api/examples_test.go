package api

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
)

// The description's examples are taken from the tests: every exchange
// CheckedHandler passes is kept here, normalized (tokens, secrets, ids,
// times, loopback ports), under its operation and status; a full run of
// the package checks the committed examples (testdata/examples.json)
// against them, and with -update writes them, which the build
// (buildOpenAPI) puts into openapi.json.
const examplesFile = "testdata/examples.json"

// examplesLimit bounds an example: a larger body says no more and
// would fill the description.
const examplesLimit = 4096

var recorded = struct {
	sync.Mutex
	m map[string]map[string]sample // key, the example as JSON: the example
}{m: map[string]map[string]sample{}}

// sample is one exchange's body, normalized, and whether a test that
// walks the API as a newcomer would made it (preferredTests).
type sample struct {
	v         any
	preferred bool
}

// preferredTests walk the API as its documentation does: their
// exchanges are the examples where they make one.
var preferredTests = []string{"TestFirstBlindExecution", "TestAdministratorsTour"}

// Example keys: "GET /v1/tools request" for a request body, "GET
// /v1/tools 200" for an answer, "#/components/responses/Name" for an
// answer the description names.
func requestKey(route *routers.Route) string {
	return route.Method + " " + route.Path + " request"
}

// recordExample keeps the JSON bodies of an exchange the description
// accepted.
func recordExample(test string, route *routers.Route, status int, reqType string, reqBody []byte, rec *recorder) {
	test, _, _ = strings.Cut(test, "/")
	preferred := slices.Contains(preferredTests, test)
	if route.Operation.Extensions["x-opaque"] == true {
		return
	}
	if status < 300 && strings.HasPrefix(reqType, "application/json") {
		keepExample(requestKey(route), reqBody, preferred)
	}
	if !strings.HasPrefix(rec.sent.Get("Content-Type"), "application/json") {
		return
	}
	key := route.Method + " " + route.Path + " " + strconv.Itoa(status)
	if resp := route.Operation.Responses.Status(status); resp != nil && resp.Ref != "" {
		key = resp.Ref
	}
	keepExample(key, rec.body.Bytes(), preferred)
}

func keepExample(key string, body []byte, preferred bool) {
	if len(body) == 0 || len(body) > examplesLimit {
		return
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return
	}
	if m, ok := v.(map[string]any); ok && strings.Contains(key, "/v1/credentials/") {
		if _, ok := m["value"].(string); ok {
			m["value"] = "s3cret" // a stored credential's value
		}
	}
	v = normalized(v, "", map[string]string{})
	b, _ := json.Marshal(v)
	recorded.Lock()
	defer recorded.Unlock()
	if recorded.m[key] == nil {
		recorded.m[key] = map[string]sample{}
	}
	if had, ok := recorded.m[key][string(b)]; ok && had.preferred {
		return
	}
	recorded.m[key][string(b)] = sample{v, preferred}
}

var (
	uuidPattern     = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	tokenPattern    = regexp.MustCompile(`bx_[A-Za-z0-9_-]{20,}`)
	timePattern     = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?`)
	loopbackPattern = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):\d+`)
	tempPattern     = regexp.MustCompile(`/tmp/[^\s"']+`)
	randomPattern   = regexp.MustCompile(`\b[0-9a-f]{32}\b|\b[A-Za-z0-9_-]{43}\b`) // 16 and 32 random bytes: pending ids, flow ids
	identifier      = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	// What a test measures or counts by the clock.
	timedFields = []string{"latency_ms", "elapsed_ms", "duration_ms", "wait_ms", "retry_after", "retry_after_ms",
		"age_ms", "expires_in", "uptime_seconds"}
	// What holds a secret a test made up, or a token the engine made.
	secretFields = []string{"password", "secret", "client_secret", "token", "access_token", "refresh_token",
		"api_key", "code_verifier"}
)

// normalized is v with what differs between runs made fixed: tokens,
// secrets, ids (numbered in order of appearance, so that one id stays
// one id), times and loopback ports. key is v's field name.
func normalized(v any, key string, ids map[string]string) any {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			if key == "credentials" {
				if _, ok := c.(string); ok {
					t[k] = "s3cret" // a payload's credentials, by name
					continue
				}
			}
			t[k] = normalized(c, k, ids)
		}
	case []any:
		for i, c := range t {
			t[i] = normalized(c, key+"[]", ids)
		}
	case float64:
		if slices.Contains(timedFields, key) {
			return float64(0)
		}
	case string:
		if slices.Contains(secretFields, key) {
			if strings.HasPrefix(t, "bx_") {
				return "bx_" + strings.Repeat("X", 43)
			}
			return "s3cret"
		}
		if (key == "code" || key == "state") && !identifier.MatchString(t) { // an OAuth code or state, not an error code
			return "s3cret"
		}
		if key == "token_prefix" {
			return "bx_XXXXX"
		}
		t = tokenPattern.ReplaceAllString(t, "bx_"+strings.Repeat("X", 43))
		t = uuidPattern.ReplaceAllStringFunc(t, func(id string) string {
			if n, ok := ids[id]; ok {
				return n
			}
			n := fmt.Sprintf("0193c3d2-7b1e-7c35-a0e1-%012d", len(ids)+1)
			ids[id] = n
			return n
		})
		t = randomPattern.ReplaceAllStringFunc(t, func(r string) string {
			if len(r) == 32 {
				return "0123456789abcdef0123456789abcdef"
			}
			return strings.Repeat("X", 43)
		})
		t = timePattern.ReplaceAllString(t, "2026-11-28T09:30:00Z")
		t = loopbackPattern.ReplaceAllString(t, "127.0.0.1:8080")
		return tempPattern.ReplaceAllString(t, "/tmp/example")
	}
	return v
}

// shape is what an example says about the API: its fields and their
// types, with error codes (a program branches on them) as they are.
// An array's shape is the set of its elements' shapes.
func shape(v any, key string) string {
	switch t := v.(type) {
	case map[string]any:
		var b strings.Builder
		b.WriteString("{")
		for _, k := range slices.Sorted(maps.Keys(t)) {
			b.WriteString(strconv.Quote(k) + ":" + shape(t[k], k) + ",")
		}
		return b.String() + "}"
	case []any:
		var elems []string
		for _, c := range t {
			elems = append(elems, shape(c, key))
		}
		slices.Sort(elems)
		return "[" + strings.Join(slices.Compact(elems), ",") + "]"
	case string:
		if key == "code" {
			return strconv.Quote(t)
		}
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	}
	return "null"
}

// pick is the example of a key the tests gave: one of preferredTests',
// then the one that says most (most fields), then the shortest, then the
// first in order.
func pick(samples map[string]sample) any {
	keys := slices.Collect(maps.Keys(samples))
	count := func(k string) int { return strings.Count(shape(samples[k].v, ""), ":") }
	rank := func(k string) int {
		if samples[k].preferred {
			return 0
		}
		return 1
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(rank(a), rank(b)), cmp.Compare(count(b), count(a)), cmp.Compare(len(a), len(b)), strings.Compare(a, b))
	})
	return samples[keys[0]].v
}

// fullRun: every test of the package ran, so every exchange was seen.
func fullRun() bool {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f == nil || f.Value.String() != "" {
			return false
		}
	}
	return !testing.Short()
}

// committedExamples are the examples of testdata/examples.json.
func committedExamples() (map[string]any, error) {
	b, err := os.ReadFile(examplesFile)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", examplesFile, err)
	}
	return m, nil
}

// checkExamples compares the committed examples with what the tests
// exchanged: each must have the shape of one of them. With write, it
// writes them instead: a committed example the tests still give in its
// shape is kept (no churn), the others are picked afresh.
func checkExamples(write bool) error {
	committed, err := committedExamples()
	if err != nil {
		return err
	}
	recorded.Lock()
	defer recorded.Unlock()
	if write {
		out := map[string]any{}
		for key, samples := range recorded.m {
			if ex, ok := committed[key]; ok && shapeSeen(samples, ex) {
				out[key] = ex
			} else {
				out[key] = pick(samples)
			}
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
		return os.WriteFile(examplesFile, b.Bytes(), 0o644)
	}
	if stale := staleExamples(committed, recorded.m); len(stale) > 0 {
		return fmt.Errorf("%d examples of %s are no longer what the tests exchange (go test ./api -update; go generate ./api ./api/client):\n  %s",
			len(stale), examplesFile, strings.Join(stale, "\n  "))
	}
	return nil
}

// shapeSeen reports whether one of samples has ex's shape.
func shapeSeen(samples map[string]sample, ex any) bool {
	want := shape(ex, "")
	for _, v := range samples {
		if shape(v.v, "") == want {
			return true
		}
	}
	return false
}

// staleExamples are the keys of the committed examples that no exchange
// of a run had the shape of, in order.
func staleExamples(committed map[string]any, run map[string]map[string]sample) []string {
	var stale []string
	for key, ex := range committed {
		if _, seen := run[key]; !seen && !successKey(key) {
			// An error some tests meet only on a slow machine (a
			// deadline, a limit): not made in this run is no change.
			continue
		}
		if !shapeSeen(run[key], ex) {
			stale = append(stale, key)
		}
	}
	slices.Sort(stale)
	return stale
}

// TestStaleExamplesFound: a full run's check fails an example whose
// fields, types or error code the tests no longer exchange, and a
// success no test made; values that differ between runs, and an error
// no test met this time, pass.
func TestStaleExamplesFound(t *testing.T) {
	decode := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	run := func(key string, bodies ...string) map[string]map[string]sample {
		m := map[string]sample{}
		for _, b := range bodies {
			m[b] = sample{v: decode(b)}
		}
		return map[string]map[string]sample{key: m}
	}
	const ok, notFound = "GET /v1/tools/{name} 200", "GET /v1/tools/{name} 404"
	for _, tc := range []struct {
		name, key, committed string
		run                  map[string]map[string]sample
		stale                bool
	}{
		{"the same shape, other values", ok, `{"name":"a","n":1,"tags":["x"]}`, run(ok, `{"name":"b","n":2,"tags":[]}`, `{"name":"c","n":3,"tags":["y","z"]}`), false},
		{"a field added", ok, `{"name":"a"}`, run(ok, `{"name":"a","n":1}`), true},
		{"a field retyped", ok, `{"name":"a","n":1}`, run(ok, `{"name":"a","n":"1"}`), true},
		{"an error code changed", notFound, `{"error":{"code":"plugin_not_found","message":"m"}}`, run(notFound, `{"error":{"code":"not_found","message":"m"}}`), true},
		{"an error no test met this time", notFound, `{"error":{"code":"plugin_not_found","message":"m"}}`, run(ok, `{}`), false},
		{"a success no test made", ok, `{"name":"a"}`, run(notFound, `{}`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale := staleExamples(map[string]any{tc.key: decode(tc.committed)}, tc.run)
			if got := len(stale) > 0; got != tc.stale {
				t.Errorf("stale %v (%v), want %v", got, stale, tc.stale)
			}
		})
	}
}

// successKey reports whether key is a request's or a success's
// example, which every full run makes.
func successKey(key string) bool {
	return strings.HasSuffix(key, " request") || regexp.MustCompile(` 2\d\d$`).MatchString(key)
}

// TestMain checks, after a full run, that the committed examples are
// what the tests exchanged (-update writes them and rebuilds
// openapi.json with them).
func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if code == 0 && fullRun() {
		err := checkExamples(*update)
		if err == nil && *update {
			err = writeOpenAPI()
		}
		if err == nil && *update {
			committed, _ := committedExamples()
			if missing := withoutExamples(committed); len(missing) > 0 {
				err = errors.New(strings.Join(missing, "\n    "))
			}
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "--- FAIL: TestMain (the description's examples)\n    %v\nFAIL\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// writeOpenAPI rebuilds openapi.json.
func writeOpenAPI() error {
	built, err := buildOpenAPI()
	if err != nil {
		return err
	}
	return os.WriteFile("openapi.json", built, 0o644)
}

// exampleExceptions are the operations without an example of their
// success, and why.
var exampleExceptions = map[string]string{
	"GET /v1/openapi.json": "the answer is this description itself",
}

// TestEveryOperationHasExample: each operation answering JSON on
// success has an example of that answer, and each reading a JSON body
// an example of the body, taken from the tests (testdata/examples.json),
// unless exampleExceptions says why not. (With -update, the examples
// are being rewritten: a full run checks them once written.)
func TestEveryOperationHasExample(t *testing.T) {
	if *update {
		t.Skip("the examples are being rewritten")
	}
	committed, err := committedExamples()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range withoutExamples(committed) {
		t.Error(e)
	}
	src, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^.*\bexamples?:.*$`).Find(src); m != nil {
		t.Errorf("openapi.yaml: %q: an example written by hand; the build takes them from the tests", m)
	}
}

// withoutExamples says which operations lack the examples
// TestEveryOperationHasExample asks for, and which exceptions no longer
// apply.
func withoutExamples(committed map[string]any) []string {
	doc, err := openapi3.NewLoader().LoadFromData(openAPIDocument)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Extensions["x-opaque"] == true {
				continue
			}
			name := method + " " + path
			var missing []string
			if op.RequestBody != nil && op.RequestBody.Value.Content.Get("application/json") != nil {
				if _, ok := committed[name+" request"]; !ok {
					missing = append(missing, "request")
				}
			}
			found, jsonSuccess := false, false
			for status, resp := range op.Responses.Map() {
				code, _ := strconv.Atoi(status)
				if code < 200 || code >= 300 || resp.Value == nil || resp.Value.Content.Get("application/json") == nil {
					continue
				}
				jsonSuccess = true
				key := name + " " + status
				if resp.Ref != "" {
					key = resp.Ref
				}
				if _, ok := committed[key]; ok {
					found = true
				}
			}
			if jsonSuccess && !found {
				missing = append(missing, "success answer")
			}
			_, excepted := exampleExceptions[name]
			switch {
			case len(missing) > 0 && !excepted:
				out = append(out, fmt.Sprintf("%s: no example of its %s from the tests (%s); a test that makes the exchange, or a reason in exampleExceptions",
					name, strings.Join(missing, " or "), examplesFile))
			case len(missing) == 0 && excepted:
				out = append(out, name+": has its examples now; drop it from exampleExceptions")
			}
		}
	}
	slices.Sort(out)
	return out
}
