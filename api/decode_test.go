package api

import (
	"encoding/json"
	"reflect"
	"testing"
)

var executeBodies = []string{
	`{"name":"search_company_basic","arguments":{"keyword":"字节跳动"},"user_id":7}`,
	`{"plugin":{"name":"p","execution":{"method":"GET"}},"arguments":{"a":[1,2]},"credentials":{"K":"v","L":""}}`,
	`{"name":"p","user_id":"7","arguments":null,"plugin":null}`,
	`{"name":"p","user_id":null}`,
	`{"name":"p","fixed_params":{"a":1}}`,
	`{"Name":"p"}`,
	`{"name":"p","name":"q"}`,
	`{"name":"a\"b"}`,
	`{"name":"p","credentials":{"K":"a\nb"}}`,
	`{"credentials":{"K":"1","K":"2"}}`,
	`{"credentials":{"K":1}}`,
	`{"credentials":[]}`,
	`{"user_id":-1}`,
	`{"user_id":true}`,
	`{"name":"\xff"}`,
	`{"unknown":1}`,
	`[]`, `{`, `null`, `{"name":01}`, ` {"name":"p"} `,
}

// TestExecuteRequestFastPath: the common bodies take the fast path, and
// every body it takes decodes as encoding/json decodes it.
func TestExecuteRequestFastPath(t *testing.T) {
	for i, body := range executeBodies {
		fast := checkFastDecode(t, body)
		if want := i < 4 || body == ` {"name":"p"} `; fast != want {
			t.Errorf("%s: fast path taken = %v, want %v", body, fast, want)
		}
	}
}

// FuzzExecuteRequestDecode: wherever the fast path answers, it agrees with
// encoding/json.
func FuzzExecuteRequestDecode(f *testing.F) {
	for _, b := range executeBodies {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) { checkFastDecode(t, body) })
}

// checkFastDecode decodes body both ways and reports whether the fast path
// answered; where it did, the results must be equal.
func checkFastDecode(t *testing.T, body string) bool {
	t.Helper()
	var fast ExecuteRequest
	if !fast.decodeFast([]byte(body)) {
		if !reflect.DeepEqual(fast, ExecuteRequest{}) {
			t.Errorf("%q: the fast path declined but changed the request: %+v", body, fast)
		}
		return false
	}
	if field, _ := unknownField([]byte(body), reflect.TypeOf(fast), ""); field != "" {
		t.Errorf("%q: the fast path took a body with the unknown field %s", body, field)
	}
	var slow ExecuteRequest
	if err := json.Unmarshal([]byte(body), &slow); err != nil {
		t.Errorf("%q: fast path decoded %+v; encoding/json: %v", body, fast, err)
		return true
	}
	if !reflect.DeepEqual(fast, slow) {
		t.Errorf("%q: fast path %+v, encoding/json %+v", body, fast, slow)
	}
	return true
}
