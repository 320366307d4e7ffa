package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestCredentials(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		put := func(user int64, key, value, by string) *store.Credential {
			t.Helper()
			c := &store.Credential{UserID: user, Key: key, Value: value, KeyID: "kid1",
				Audit: store.Audit{CreateBy: by, UpdateBy: by}}
			if err := s.PutCredential(ctx, c); err != nil {
				t.Fatalf("PutCredential(%d, %s): %v", user, key, err)
			}
			return c
		}
		first := put(1, "api_key", "v1:kid1:AAAA", "alice")
		put(1, "Api_Key", "v1:kid1:BBBB", "alice") // keys are exact
		put(1, "token", "v1:kid1:CCCC", "alice")
		put(2, "api_key", "v1:kid1:DDDD", "bob")

		// Upsert keeps the row and its creation audit.
		again := put(1, "api_key", "v1:kid1:EEEE", "carol")
		if again.ID != first.ID || again.CreateBy != "alice" || !again.CreateTime.Equal(first.CreateTime) {
			t.Errorf("upsert gave ID=%d CreateBy=%q CreateTime=%v; want ID=%d alice %v",
				again.ID, again.CreateBy, again.CreateTime, first.ID, first.CreateTime)
		}

		cs, err := s.GetCredentials(ctx, 1, []string{"token", "api_key", "missing"})
		if err != nil {
			t.Fatalf("GetCredentials: %v", err)
		}
		if len(cs) != 2 || cs[0].Key != "api_key" || cs[0].Value != "v1:kid1:EEEE" || cs[0].UpdateBy != "carol" || cs[1].Key != "token" {
			t.Errorf("GetCredentials = %+v", cs)
		}
		if cs, err := s.GetCredentials(ctx, 1, nil); err != nil || len(cs) != 0 {
			t.Errorf("GetCredentials(no keys) = %v, %v", cs, err)
		}

		all, err := s.ListCredentials(ctx, 1)
		if err != nil {
			t.Fatalf("ListCredentials: %v", err)
		}
		if got, want := credentialKeys(all), []string{"Api_Key", "api_key", "token"}; !slices.Equal(got, want) {
			t.Errorf("ListCredentials = %v, want %v", got, want)
		}

		if err := s.DeleteCredential(ctx, 1, "token"); err != nil {
			t.Fatalf("DeleteCredential: %v", err)
		}
		wantErrIs(t, "DeleteCredential again", s.DeleteCredential(ctx, 1, "token"), store.ErrNotFound)
		if cs, _ := s.GetCredentials(ctx, 2, []string{"api_key"}); len(cs) != 1 || cs[0].Value != "v1:kid1:DDDD" {
			t.Errorf("user 2's credential disturbed: %+v", cs)
		}
	})
}

func TestUpdateCredentialValue(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		c := &store.Credential{UserID: 1, Key: "k", Value: "old", KeyID: "kid1"}
		if err := s.PutCredential(ctx, c); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name     string
			id       int64
			oldValue string
			wantErr  error
			want     string
		}{
			{"stale value is not overwritten", c.ID, "something else", store.ErrNotFound, "old"},
			{"missing row", c.ID + 100, "old", store.ErrNotFound, "old"},
			{"matching value is replaced", c.ID, "old", nil, "new"},
		}
		for _, tt := range tests {
			err := s.UpdateCredentialValue(ctx, tt.id, tt.oldValue, "new", "kid2")
			if tt.wantErr == nil && err != nil {
				t.Errorf("%s: %v", tt.name, err)
			}
			if tt.wantErr != nil {
				wantErrIs(t, tt.name, err, tt.wantErr)
			}
			cs, _ := s.GetCredentials(ctx, 1, []string{"k"})
			if len(cs) != 1 || cs[0].Value != tt.want {
				t.Errorf("%s: stored %+v, want value %q", tt.name, cs, tt.want)
			}
		}
		if cs, _ := s.GetCredentials(ctx, 1, []string{"k"}); cs[0].KeyID != "kid2" {
			t.Errorf("key id = %q, want kid2", cs[0].KeyID)
		}
	})
}

func TestEachCredential(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		// More than two read batches, to cover the paging.
		const n = 450
		for i := range n {
			c := &store.Credential{UserID: int64(i % 3), Key: fmt.Sprintf("k%03d", i), Value: "v", KeyID: "kid1"}
			if err := s.PutCredential(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		seen := map[int64]bool{}
		err := s.EachCredential(ctx, func(c *store.Credential) error {
			if seen[c.ID] {
				t.Errorf("credential %d visited twice", c.ID)
			}
			seen[c.ID] = true
			// Writing from inside fn must not deadlock (SQLite).
			return s.UpdateCredentialValue(ctx, c.ID, c.Value, "v2", "kid2")
		})
		if err != nil {
			t.Fatalf("EachCredential: %v", err)
		}
		if len(seen) != n {
			t.Errorf("visited %d credentials, want %d", len(seen), n)
		}

		stop := fmt.Errorf("stop")
		calls := 0
		err = s.EachCredential(ctx, func(*store.Credential) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Errorf("EachCredential with failing fn = %v after %d calls, want stop after 1", err, calls)
		}
	})
}

func credentialKeys(cs []store.Credential) []string {
	var keys []string
	for _, c := range cs {
		keys = append(keys, c.Key)
	}
	return keys
}

// TestConcurrentWrites guards the SQLite pool settings: concurrent writers
// must queue on the lock, not fail with "database is locked".
func TestConcurrentWrites(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		const workers, each = 8, 15
		errs := make(chan error, workers)
		for w := range workers {
			go func() {
				for i := range each {
					c := &store.Credential{UserID: int64(w), Key: fmt.Sprintf("k%d", i%5), Value: "v", KeyID: "kid"}
					if err := s.PutCredential(ctx, c); err != nil {
						errs <- err
						return
					}
					if err := s.InsertExecutions(ctx, []store.Execution{{PluginName: "p", Status: store.ExecOK}}); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range workers {
			if err := <-errs; err != nil {
				t.Errorf("concurrent write: %v", err)
			}
		}
		es, err := s.ListExecutions(ctx, store.ExecutionFilter{Limit: store.MaxExecutionLimit})
		if err != nil || len(es) != workers*each {
			t.Errorf("logged %d executions (%v), want %d", len(es), err, workers*each)
		}
	})
}
