package toolsearch

import (
	"context"
	"testing"

	"github.com/blindexec/blindexec/plugins"
)

func TestLiveRebuildSwaps(t *testing.T) {
	var l Live
	if got := l.Current().Search("issue", 5); len(got) != 0 {
		t.Fatalf("empty index found %v", got)
	}
	ps := []*plugins.Plugin{
		{Name: "issues_create", Description: "Create an issue"},
		{Name: "repos_delete", Description: "Delete a repository"},
	}
	if err := l.Rebuild(context.Background(), ps); err != nil {
		t.Fatal(err)
	}
	got := l.Current().Search("create issue", 5)
	if len(got) == 0 || got[0].Name != "issues_create" {
		t.Fatalf("Search = %v, want issues_create first", got)
	}
}
