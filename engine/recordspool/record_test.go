package recordspool

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/blindexec/blindexec/engine"
)

func TestAppendRecord(t *testing.T) {
	at := time.Date(2026, 11, 25, 15, 4, 5, 123456789, time.FixedZone("", 8*3600))
	for _, r := range []engine.Record{
		{ID: "0192-a", PluginName: "p", UserID: 7, Status: "ok", HTTPStatus: 200, LatencyMS: 3, Attempts: 1, CreatedAt: at},
		{ID: "x", RunID: "run-1", PluginName: "github_repos_get", Status: "error", HTTPStatus: 502, Attempts: 3,
			ErrorClass: "upstream_error", ErrorMessage: `upstream said "no" <b>&</b>` + "\n\x00\u2028 中文 \xff", CreatedAt: at.UTC(),
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"},
		{ID: "q", PluginName: "ask", Status: "ok", Confirmation: "approved by u1",
			Questions: `[{"server":"shop","mode":"form","message":"Size? <b>","answer":{"action":"accept","content":{"size":"L"}}}]`, CreatedAt: at},
		{},
	} {
		want, err := json.Marshal(&r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendRecord([]byte("head"), &r)
		if err != nil || !bytes.Equal(got, append([]byte("head"), want...)) {
			t.Errorf("appendRecord(%+v) = %s, %v; want head%s", r, got, err, want)
		}
	}
	if _, err := appendRecord(nil, &engine.Record{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("appendRecord took the year 10000, which JSON's time cannot hold")
	}
}

// FuzzAppendRecord: for any fields, appendRecord writes what json.Marshal
// writes, and fails where it fails.
func FuzzAppendRecord(f *testing.F) {
	f.Add("0192-a", "", "p", int64(7), "ok", 200, int64(3), 1, "", "", int64(1764000000123456789), 0, "")
	f.Add("id\"", "r\\", "<p>", int64(-1), "\x00", -5, int64(1)<<62, 9, "c&", "m\u2028\xff", int64(-1)<<62, -13*3600, "4bf92f3577b34da6a3ce929d0e0e4736")
	f.Fuzz(func(t *testing.T, id, run, plugin string, user int64, status string, code int, latency int64,
		attempts int, class, msg string, nanos int64, offset int, trace string) {
		r := engine.Record{ID: id, RunID: run, PluginName: plugin, UserID: user, Status: status, HTTPStatus: code,
			LatencyMS: latency, Attempts: attempts, ErrorClass: class, ErrorMessage: msg,
			CreatedAt: time.Unix(0, nanos).In(time.FixedZone("", offset%(48*3600))), TraceID: trace}
		want, wantErr := json.Marshal(&r)
		got, err := appendRecord(nil, &r)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("appendRecord error %v, json.Marshal's %v", err, wantErr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("appendRecord wrote\n%s\njson.Marshal\n%s", got, want)
		}
	})
}
