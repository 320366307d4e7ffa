package store_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/blindexec/blindexec/internal/testdb"
	"github.com/blindexec/blindexec/store"
)

func TestImportSources(t *testing.T) {
	testdb.Each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		loc := "https://api.example.com/openapi.json"
		_, err := s.FindImportSource(ctx, store.SourceOpenAPI, loc)
		wantErrIs(t, "FindImportSource before import", err, store.ErrNotFound)

		when := time.Now()
		src := &store.ImportSource{Kind: store.SourceOpenAPI, Location: loc, SHA256: strings.Repeat("0", 64),
			Prefix: "ex_", ImportedTime: &when, OperationCount: 10, ImportedCount: 9, FailedCount: 1}
		if err := s.CreateImportSource(ctx, src); err != nil {
			t.Fatalf("CreateImportSource: %v", err)
		}
		// Same location as an MCP server is another source.
		if err := s.CreateImportSource(ctx, &store.ImportSource{Kind: store.SourceMCP, Location: loc}); err != nil {
			t.Fatalf("CreateImportSource mcp: %v", err)
		}

		got, err := s.FindImportSource(ctx, store.SourceOpenAPI, loc)
		if err != nil {
			t.Fatalf("FindImportSource: %v", err)
		}
		if got.ID != src.ID || got.Prefix != "ex_" || got.ImportedCount != 9 || got.FailedCount != 1 ||
			got.ImportedTime == nil || !got.ImportedTime.Equal(when.Truncate(time.Second)) {
			t.Errorf("FindImportSource = %+v, want %+v", got, src)
		}

		got.SHA256 = strings.Repeat("f", 64)
		got.ImportedCount, got.FailedCount = 10, 0
		if err := s.UpdateImportSource(ctx, got); err != nil {
			t.Fatalf("UpdateImportSource: %v", err)
		}
		again, _ := s.FindImportSource(ctx, store.SourceOpenAPI, loc)
		if again.SHA256 != got.SHA256 || again.ImportedCount != 10 || again.FailedCount != 0 || !again.CreateTime.Equal(src.CreateTime) {
			t.Errorf("after update: %+v", again)
		}
		wantErrIs(t, "UpdateImportSource missing", s.UpdateImportSource(ctx, &store.ImportSource{ID: src.ID + 100}), store.ErrNotFound)
	})
}
