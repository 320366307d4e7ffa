package access

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Operator 75: Readable probes every table RuoYi's statements read (a
// sys_menu dropped, sys_user intact, is unreadable), names the source,
// and keeps its answer for ProbeEvery: probes at /readyz's rate cost one
// read per ProbeEvery.
func TestReadableProbesTheSource(t *testing.T) {
	db := scriptDB(t, "testdata/ruoyi-vue/ry_20260417.sql")
	c, err := New(db, Settings{Source: SourceRuoYi})
	if err != nil {
		t.Fatal(err)
	}
	c.ProbeEvery = time.Hour
	if err := c.Readable(t.Context()); err != nil {
		t.Fatalf("RuoYi's tables: %v", err)
	}
	if _, err := db.Exec(`DROP TABLE sys_menu`); err != nil {
		t.Fatal(err)
	}
	if err := c.Readable(t.Context()); err != nil {
		t.Errorf("read again within ProbeEvery: %v, want the answer kept", err)
	}
	c.ProbeEvery = time.Nanosecond
	err = c.Readable(t.Context())
	if ue, ok := errors.AsType[*UnavailableError](err); !ok || ue.Source != SourceRuoYi || !strings.Contains(err.Error(), "sys_menu") {
		t.Errorf("sys_menu dropped: %v, want an UnavailableError naming ruoyi and sys_menu", err)
	}
	none, err := New(db, Settings{})
	if err != nil || none.Readable(t.Context()) != nil {
		t.Errorf("SourceNone: %v", err)
	}
}
