package confirm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

func TestPolicy(t *testing.T) {
	get := &plugins.Plugin{Execution: plugins.Execution{Method: "GET"}}
	del := &plugins.Plugin{Execution: plugins.Execution{Method: "DELETE"}}
	for _, tc := range []struct {
		base, asked string
		want        Policy
		err         string
	}{
		{"consequential", "", Consequential, ""},
		{"", "", Consequential, ""},
		{"consequential", "always", Always, ""},
		{"consequential", "consequential", Consequential, ""},
		{"never", "consequential", Consequential, ""},
		{"consequential", "never", "", "asks for less confirmation"},
		{"always", "consequential", "", "asks for less confirmation"},
		{"consequential", "sometimes", "", "expected consequential, never or always"},
	} {
		base, err := ParsePolicy(tc.base)
		if err != nil {
			t.Fatal(err)
		}
		got, err := base.Stricter(tc.asked)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s asked %s: %v, want an error saying %q", tc.base, tc.asked, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s asked %q: %s %v, want %s", tc.base, tc.asked, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		p         Policy
		get, dele bool
	}{{Never, false, false}, {Consequential, false, true}, {Always, true, true}} {
		if tc.p.Needs(get) != tc.get || tc.p.Needs(del) != tc.dele {
			t.Errorf("%s: Needs(GET) %v, Needs(DELETE) %v", tc.p, tc.p.Needs(get), tc.p.Needs(del))
		}
	}
}

func TestIDsAndDeclined(t *testing.T) {
	a, b := NewID(), NewID()
	if len(a) != 32 || a == b {
		t.Errorf("ids %q %q: want 32 hex digits (128 bits), distinct", a, b)
	}
	var out struct {
		Error struct{ Code, Message, Outcome string }
	}
	if err := json.Unmarshal([]byte(Declined(Denied, `not "this" one`)), &out); err != nil ||
		out.Error.Code != "not_confirmed" || !strings.Contains(out.Error.Message, `the user declined this call: not "this" one`) {
		t.Errorf("Declined: %+v %v", out, err)
	}
	if err := json.Unmarshal([]byte(Declined(Expired, "")), &out); err != nil ||
		out.Error.Outcome != Expired || !strings.Contains(out.Error.Message, "the user did not decide in time: expired; nothing was sent") {
		t.Errorf("Declined(Expired): %+v %v", out, err)
	}
}

func TestOutcomeByKind(t *testing.T) {
	for _, tc := range []struct{ kind, decision, want string }{
		{KindConfirmation, Approve, Approved},
		{KindConfirmation, Deny, Denied},
		{KindConfirmation, Continue, ""},
		{KindAuthorization, Continue, Continued},
		{KindAuthorization, Cancel, Cancelled},
		{KindAuthorization, Approve, ""},
		{"", Approve, Approved}, // items stored before kinds were two
	} {
		if got := Outcome(tc.kind, tc.decision); got != tc.want {
			t.Errorf("Outcome(%q, %q) = %q, want %q", tc.kind, tc.decision, got, tc.want)
		}
	}
	var out struct {
		Error struct{ Code, Message, Outcome, Provider string }
	}
	if err := json.Unmarshal([]byte(NotConnected("acme <b>", Cancelled)), &out); err != nil || out.Error.Code != "not_connected" ||
		out.Error.Provider != "acme <b>" || !strings.Contains(out.Error.Message, "did not connect an account at acme <b>") {
		t.Errorf("NotConnected: %+v %v", out, err)
	}
	if err := json.Unmarshal([]byte(NotConnected("acme", Expired)), &out); err != nil || !strings.Contains(out.Error.Message, "in time") {
		t.Errorf("NotConnected(Expired): %+v %v", out, err)
	}
}
