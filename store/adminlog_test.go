package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestAdminLog(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		for _, e := range []store.AdminEvent{
			{Actor: "admin", Via: "console", Action: "PUT", Kind: "plugin", Target: "/v1/plugins/a", HTTPStatus: 200},
			{Actor: "user 7", Via: "api", Action: "PUT", Kind: "credential", Target: "/v1/credentials/7/K", HTTPStatus: 204},
		} {
			if err := s.InsertAdminEvent(ctx, &e); err != nil {
				t.Fatal(err)
			}
		}
		all, err := s.ListAdminEvents(ctx, store.AdminEventFilter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 2 || all[0].Kind != "credential" || all[1].Target != "/v1/plugins/a" || all[0].CreateTime.IsZero() {
			t.Fatalf("ListAdminEvents = %+v, want the credential change first", all)
		}
		creds, err := s.ListAdminEvents(ctx, store.AdminEventFilter{Kind: "plugin", Since: time.Now().Add(-time.Hour)})
		if err != nil || len(creds) != 1 || creds[0].Actor != "admin" {
			t.Fatalf("ListAdminEvents(kind plugin) = %+v, %v", creds, err)
		}
		out := &store.AdminEvent{Actor: "admin", Via: "console", Action: store.AdminSignOut, Kind: store.AdminKindSession, Target: "sid-1", HTTPStatus: 303}
		in := &store.AdminEvent{Actor: "admin", Via: "console", Action: store.AdminSignIn, Kind: store.AdminKindSession, Target: "sid-2", HTTPStatus: 303}
		for _, e := range []*store.AdminEvent{out, in} {
			if err := s.InsertAdminEvent(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		if ids, err := s.EndedSessions(ctx, time.Now().Add(-time.Hour)); err != nil || len(ids) != 1 || ids[0] != "sid-1" {
			t.Fatalf("EndedSessions = %v, %v; want [sid-1]", ids, err)
		}
		if ids, err := s.EndedSessions(ctx, time.Now().Add(time.Hour)); err != nil || len(ids) != 0 {
			t.Fatalf("EndedSessions(since the future) = %v, %v", ids, err)
		}
		later, err := s.ListAdminEvents(ctx, store.AdminEventFilter{Since: time.Now().Add(time.Hour)})
		if err != nil || len(later) != 0 {
			t.Fatalf("ListAdminEvents(since the future) = %+v, %v", later, err)
		}
	})
}
