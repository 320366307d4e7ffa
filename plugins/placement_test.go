package plugins

import (
	"encoding/json"
	"testing"
)

// asMap is what Placement.MarshalJSON wrote before it wrote the bytes
// itself: json.Marshal of a map of locations and ArgPlacements. Stored
// content hashes were made of those bytes.
func asMap(t testing.TB, p Placement) string {
	t.Helper()
	out := map[string]any{}
	for name, a := range p.Args {
		if a.Name == "" && a.Style == "" && a.Explode == nil && a.ContentType == "" && a.Filename == "" {
			out[name] = a.In
		} else {
			out[name] = a
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestPlacementMarshalAsMap(t *testing.T) {
	yes := true
	for name, p := range map[string]Placement{
		"locations": {Args: map[string]ArgPlacement{"b": {In: InQuery}, "a": {In: InPath}, "c_2": {In: InBody}}},
		"escapes":   {Args: map[string]ArgPlacement{"<a&b>": {In: "q\"\\<"}, "\u2028é\xff": {In: "\x01"}, "": {In: ""}}},
		"objects": {Args: map[string]ArgPlacement{
			"x": {In: InQuery, Name: "x[]", Style: "form", Explode: &yes},
			"f": {In: InBody, ContentType: "image/png", Filename: "a<b>.png"},
			"y": {In: InHeader},
		}},
	} {
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := asMap(t, p); string(got) != want {
			t.Errorf("%s: %s, json.Marshal of the map %s", name, got, want)
		}
	}
}

func FuzzPlacementMarshal(f *testing.F) {
	f.Add("a", "query", "b", "", "<&>\u2028")
	f.Fuzz(func(t *testing.T, n1, in1, n2, wire, in2 string) {
		p := Placement{Args: map[string]ArgPlacement{n1: {In: in1}, n2: {In: in2, Name: wire}}}
		got, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		if want := asMap(t, p); string(got) != want {
			t.Errorf("%s, json.Marshal of the map %s", got, want)
		}
	})
}
