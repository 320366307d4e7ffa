package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestTokens(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		expire := time.Date(2031, 5, 6, 7, 8, 9, 600_000_000, time.FixedZone("CST", 8*3600))
		hashA, hashB := strings.Repeat("a", 64), strings.Repeat("b", 64)
		a := &store.Token{UserID: 1, Name: "ci", Hash: hashA, Prefix: "bx_aaaa", ExpireTime: &expire}
		if err := s.CreateToken(ctx, a); err != nil {
			t.Fatalf("CreateToken: %v", err)
		}
		b := &store.Token{UserID: 2, Name: "laptop", Hash: hashB}
		if err := s.CreateToken(ctx, b); err != nil {
			t.Fatalf("CreateToken: %v", err)
		}
		wantErrIs(t, "CreateToken duplicate hash", s.CreateToken(ctx, &store.Token{UserID: 3, Hash: hashA}), store.ErrDuplicate)

		got, err := s.FindTokenByHash(ctx, hashA)
		if err != nil {
			t.Fatalf("FindTokenByHash: %v", err)
		}
		// Stored in UTC at whole seconds on every database.
		wantExpire := time.Date(2031, 5, 5, 23, 8, 9, 0, time.UTC)
		if got.ID != a.ID || got.UserID != 1 || got.Prefix != "bx_aaaa" || got.LastUsedTime != nil ||
			got.ExpireTime == nil || !got.ExpireTime.Equal(wantExpire) {
			t.Errorf("FindTokenByHash = %+v (expire %v), want id %d expiring %v", got, got.ExpireTime, a.ID, wantExpire)
		}
		_, err = s.FindTokenByHash(ctx, strings.Repeat("c", 64))
		wantErrIs(t, "FindTokenByHash unknown", err, store.ErrNotFound)

		used := time.Now()
		for range 2 { // the same second twice still matches the row
			if err := s.TouchToken(ctx, a.ID, used); err != nil {
				t.Fatalf("TouchToken: %v", err)
			}
		}
		got, _ = s.FindTokenByHash(ctx, hashA)
		if got.LastUsedTime == nil || !got.LastUsedTime.Equal(used.Truncate(time.Second)) {
			t.Errorf("LastUsedTime = %v, want %v", got.LastUsedTime, used.Truncate(time.Second))
		}
		wantErrIs(t, "TouchToken missing", s.TouchToken(ctx, b.ID+100, used), store.ErrNotFound)

		user1 := int64(1)
		tests := []struct {
			name   string
			userID *int64
			want   []int64
		}{
			{"everyone", nil, []int64{a.ID, b.ID}},
			{"user 1", &user1, []int64{a.ID}},
		}
		for _, tt := range tests {
			ts, err := s.ListTokens(ctx, tt.userID)
			if err != nil {
				t.Fatalf("%s: ListTokens: %v", tt.name, err)
			}
			var ids []int64
			for _, tk := range ts {
				ids = append(ids, tk.ID)
			}
			if len(ids) != len(tt.want) || (len(ids) > 0 && ids[0] != tt.want[0]) || ids[len(ids)-1] != tt.want[len(tt.want)-1] {
				t.Errorf("%s: ListTokens ids = %v, want %v", tt.name, ids, tt.want)
			}
		}

		if err := s.DeleteToken(ctx, a.ID); err != nil {
			t.Fatalf("DeleteToken: %v", err)
		}
		wantErrIs(t, "DeleteToken again", s.DeleteToken(ctx, a.ID), store.ErrNotFound)
		_, err = s.FindTokenByHash(ctx, hashA)
		wantErrIs(t, "FindTokenByHash deleted", err, store.ErrNotFound)
	})
}
