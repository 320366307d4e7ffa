package redact

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// FuzzLocation: an import location (leftovers77) or the OTLP endpoint:
// a URL net/url parses with userinfo is shown with its userinfo alone
// written "…", so what is shown names the same host, path, query and
// fragment and is its own redaction (a sync from it as shown finds the URL
// kept for it); before, "https://u:pw@host/@scope/spec.json" was shown
// "https://…@scope/spec.json". The value of a credential's parameter, in
// the query or the path, is never shown.
func FuzzLocation(f *testing.F) {
	f.Add("root:", "@tcp(db:3306)/ry")
	f.Add("https://user:", "@api.example/v1")
	f.Add("", "@")
	f.Add("a@b:", "@c")
	f.Add("https://u:", "@host/@scope/spec.json")
	f.Add("HTTPS://u:", "@host/spec.json")
	f.Add("http://u:", "@host?q=@x#@y")
	f.Add("http://u:p@host/s?token=", "&v=1")
	f.Add("https://host/s?a=1;Api-Key=", "#x")
	f.Add("https://host/a;jsessionid=", "/spec.json;v=1?x=1")
	f.Add("https://host/spec.json;v=2;token=", "?group=a;sig=b")
	const pw = "S3cr3tPw"
	f.Fuzz(func(t *testing.T, before, after string) {
		if strings.Contains(after, pw) {
			return // the part shown names it itself
		}
		checkLocation(t, before+pw+after, pw)
	})
}

// TestCredentials: what Location hides in a query (review80) or a path
// parameter (leftovers80), as written and decoded, for a masker.
func TestCredentials(t *testing.T) {
	for _, c := range []struct {
		loc  string
		want []string
	}{
		{"https://h/s?X-Amz-Credential=AK%2F1", []string{"AK%2F1", "AK/1"}},
		{"https://h/spec.json;jsessionid=S3cr3t?group=a&token=T0k", []string{"S3cr3t", "T0k"}},
		{"https://h/s?group=admin", nil},
		{"/tmp/spec.json?token=S3cr3t", nil},
	} {
		if got := Credentials(c.loc); !slices.Equal(got, c.want) {
			t.Errorf("Credentials(%s) = %q, want %q", c.loc, got, c.want)
		}
	}
}

// checkLocation: loc's redaction as an import location hides pw where it
// is in loc's userinfo, keeps the rest of a URL net/url parses, and is its
// own redaction.
func checkLocation(t *testing.T, loc, pw string) {
	t.Helper()
	shown := Location(loc)
	if again := Location(shown); again != shown {
		t.Fatalf("%q: shown %q, which is shown %q: not its own redaction", loc, shown, again)
	}
	if (isHTTP(shown) && Hides(shown) != Hides(loc)) || (shown != loc && !Hides(loc)) {
		t.Fatalf("%q: shown %q, Hides %v then %v", loc, shown, Hides(loc), Hides(shown))
	}
	if isHTTP(loc) {
		eachCredential(loc, func(name, value string, _ int) {
			if strings.Contains(value, pw) && strings.Count(shown, pw) >= strings.Count(loc, pw) {
				t.Fatalf("%q: shown %q, with the value of %s", loc, shown, name)
			}
		})
	}
	u, err := url.Parse(loc)
	if err != nil || u.User == nil || (!strings.EqualFold(u.Scheme, "http") && !strings.EqualFold(u.Scheme, "https")) {
		return
	}
	if strings.Contains(u.User.String(), url.PathEscape(pw)) && strings.Count(shown, pw) >= strings.Count(loc, pw) {
		t.Fatalf("%q: shown %q, with the userinfo's %s", loc, shown, pw)
	}
	// "…" is no userinfo net/url parses: the shown URL with one in its place.
	back, err := url.Parse(strings.Replace(shown, "…@", "x@", 1))
	if err != nil {
		t.Fatalf("%q: shown %q, no longer a URL: %v", loc, shown, err)
	}
	// The path and query as their own redaction shows them (a
	// credential's value "…").
	query := redactedParams("?" + u.RawQuery)[1:]
	if back.Host != u.Host || pathOf(shown) != redactedParams(pathOf(loc)) || back.RawQuery != query || back.Fragment != u.Fragment || back.User.String() != "x" {
		t.Fatalf("%q: shown %q, another URL: %+v, want %+v with userinfo x", loc, shown, back, u)
	}
}

// pathOf is loc's path as written.
func pathOf(loc string) string {
	path, query, end := pathBounds(loc)
	if query >= 0 {
		end = query - 1
	}
	return loc[path:end]
}

// TestLocationUnparsed (review79): a password with a / ? or #
// written as it is ends the authority before its @; net/url refuses the
// URL, and it was shown whole. Cut at its last @; a URL net/url parses
// with an @ in its path or query keeps it.
func TestLocationUnparsed(t *testing.T) {
	checkShown(t, []struct{ loc, shown string }{
		{"https://user:Qm4e/Zk81@h/spec.json", "…@h/spec.json"},
		{"HTTP://user:Qm4e?Zk81@h/spec.json", "…@h/spec.json"},
		{"https://user:Qm4e#Zk81@h/spec.json?token=S3cr3t", "…@h/spec.json?token=…"},
		{"https://h/@scope/spec.json", "https://h/@scope/spec.json"},
		{"https://h/spec.json?mail=a@b", "https://h/spec.json?mail=a@b"},
		// An @ in its query (leftovers80's fuzzing: cut there, the ? was lost and
		// the token shown).
		{"http://?@token=S3cr3t\x14", "http://?@token=…"},
	})
}

// TestLocationQuery (leftovers78): a credential's value in an
// import URL's query is written "…" as its userinfo is; every other
// parameter, and the rest of the URL, as it is; the location shown is its
// own redaction, and Hides tells it from a URL with nothing to hide.
func TestLocationQuery(t *testing.T) {
	checkShown(t, []struct{ loc, shown string }{
		{"https://h/spec.json?access_token=S3cr3t", "https://h/spec.json?access_token=…"},
		{"https://h/s?group=admin&api_key=S3cr3t&v=2", "https://h/s?group=admin&api_key=…&v=2"},
		{"https://h/s?X-Amz-Signature=S3cr3t&X-Amz-Credential=AK%2F1&X-Amz-Date=20261130", "https://h/s?X-Amz-Signature=…&X-Amz-Credential=…&X-Amz-Date=20261130"},
		{"https://h/s?sv=2024&sig=S3cr3t;code=S3cr3t", "https://h/s?sv=2024&sig=…;code=…"},
		{"HTTPS://u:S3cr3t@h/s?private_token=S3cr3t#token=frag", "HTTPS://…@h/s?private_token=…#token=frag"},
		{"https://h/s?Subscription-Key=S3cr3t&key=S3cr3t&monkey=S3cr3t", "https://h/s?Subscription-Key=…&key=…&monkey=…"},
		{"https://h/s?%74oken=S3cr3t", "https://h/s?%74oken=…"},
		{"https://h/s?token=&token&version=S3cr3t", "https://h/s?token=&token&version=S3cr3t"},
		{"https://h/s?group=admin", "https://h/s?group=admin"},
		{"/tmp/spec.json?token=S3cr3t", "/tmp/spec.json?token=S3cr3t"}, // a file: no query
	})
}

// TestLocationPathParams (leftovers80): a credential's value in a path
// segment's parameters (";jsessionid=", which servlet containers read) was
// shown and stored whole; it is written "…" as in the query, by the same
// names, and the rest of the path as it is.
func TestLocationPathParams(t *testing.T) {
	checkShown(t, []struct{ loc, shown string }{
		{"https://h/spec.json;jsessionid=S3cr3t", "https://h/spec.json;jsessionid=…"},
		{"https://h/api;JSESSIONID=S3cr3t/spec.json?v=2", "https://h/api;JSESSIONID=…/spec.json?v=2"},
		{"https://h/spec.json;v=2;token=S3cr3t;x=1#f", "https://h/spec.json;v=2;token=…;x=1#f"},
		{"HTTPS://u:pw@h/a;sid=1;api_key=S3cr3t/b?sig=S3cr3t", "HTTPS://…@h/a;sid=1;api_key=…/b?sig=…"},
		{"https://h/a=b;c=d/spec.json", "https://h/a=b;c=d/spec.json"},
		{"https://h/token=S3cr3t/spec.json", "https://h/token=S3cr3t/spec.json"}, // a segment, no parameter
		{"https://h;token=S3cr3t/spec.json", "https://h;token=S3cr3t/spec.json"}, // the authority, refused by net/url
		{"https://h/spec.json#;token=f", "https://h/spec.json#;token=f"},         // the fragment: never sent
		{"/tmp/spec.json;token=S3cr3t", "/tmp/spec.json;token=S3cr3t"},           // a file
	})
}

// TestURL: a URL an error quotes, of any scheme, parsed or not, without
// its userinfo; one net/url refuses for a / ? or # in its password was
// quoted whole before leftovers80 (the authority ends before its @).
func TestURL(t *testing.T) {
	for _, c := range []struct{ raw, shown string }{
		{"https://u:S3cr3t@h/t", "https://…@h/t"},
		{"ftp://u:S3cr3t@h", "ftp://…@h"},
		{"https://u:S3/cr3t@h/t", "https://…@h/t"},
		{"HTTPS://u:S3?cr3t@h/t", "HTTPS://…@h/t"},
		{"https://h/@scope/t", "https://h/@scope/t"},
		{"https://h/t?mail=a@b", "https://h/t?mail=a@b"},
		{"//u:S3cr3t@h/t", "//…@h/t"}, // no scheme, an authority (review81)
		{"u:S3cr3t@h", "u:S3cr3t@h"},  // no scheme: no URL
	} {
		if shown := URL(c.raw); shown != c.shown {
			t.Errorf("%s: shown %s, want %s", c.raw, shown, c.shown)
		}
	}
}

// checkShown: each loc is shown as shown, which is its own redaction, and
// Hides tells it (and what is shown, when a URL) from a URL with nothing
// to hide.
func checkShown(t *testing.T, cases []struct{ loc, shown string }) {
	t.Helper()
	for _, c := range cases {
		shown := Location(c.loc)
		if shown != c.shown {
			t.Errorf("%s: shown %s, want %s", c.loc, shown, c.shown)
		}
		if again := Location(shown); again != shown {
			t.Errorf("%s: shown %s, then %s: not its own redaction", c.loc, shown, again)
		}
		if hides := shown != c.loc; Hides(c.loc) != hides || isHTTP(shown) && Hides(shown) != hides {
			t.Errorf("%s: Hides %v, shown %v; want %v", c.loc, Hides(c.loc), Hides(shown), hides)
		}
	}
}

// FuzzURL (review81): a URL an error quotes never shows what net/url
// parses as its userinfo (which Go's client would send as basic auth),
// whatever its scheme, or with none ("//u:pw@host/", a reference net/url
// reads with its authority, quoted whole by "must be an absolute http or
// https URL" before).
func FuzzURL(f *testing.F) {
	for _, seed := range [][2]string{{"https://u:", "@h/t"}, {"ftp://u:", "@h"}, {"//u:", "@h/t"}, {"https://u:", "/x@h/t"}, {"https://h/t?mail=a@", ""}} {
		f.Add(seed[0], seed[1])
	}
	const pw = "S3cr3tPw"
	f.Fuzz(func(t *testing.T, before, after string) {
		raw := before + pw + after
		u, err := url.Parse(raw)
		if err != nil || u.User == nil || !strings.Contains(u.User.String(), url.PathEscape(pw)) {
			return
		}
		if shown := URL(raw); strings.Count(shown, pw) >= strings.Count(raw, pw) {
			t.Fatalf("%q: shown %q, with the userinfo's %s", raw, shown, pw)
		}
	})
}
