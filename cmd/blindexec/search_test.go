package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestSearchCommand(t *testing.T) {
	c := newCLI(t)
	for _, p := range [][3]string{
		{"issues_create", "Create an issue", "Opens a new issue."},
		{"repos_delete", "Delete a repository", "Deleting a repository needs admin rights."},
		{"system_user_list", "获取用户列表", "分页查询系统用户"},
	} {
		doc := fmt.Sprintf(`{"name": %q, "title": %q, "description": %q, "parameters": {"type": "object"},
			"execution": {"method": "GET", "base_url": "https://api.example.com/x"}}`, p[0], p[1], p[2])
		if code, _, errs := c.run(doc, "plugin", "add", "-"); code != 0 {
			t.Fatalf("plugin add: %d %s", code, errs)
		}
	}
	code, out, errs := c.run("", "search", "--json", "--limit", "1", "remove", "the", "repo")
	if code != 0 {
		t.Fatalf("search --json: %d %s", code, errs)
	}
	var got struct {
		Results []struct {
			Name  string  `json:"name"`
			Score float64 `json:"score"`
			Tool  struct {
				Function struct {
					Name string `json:"name"`
				} `json:"function"`
			} `json:"tool"`
		} `json:"results"`
		TookMS *float64 `json:"took_ms"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("search --json is not JSON: %v\n%s", err, out)
	}
	if len(got.Results) != 1 || got.Results[0].Name != "repos_delete" || got.Results[0].Tool.Function.Name != "repos_delete" || got.TookMS == nil {
		t.Fatalf("search --json = %s", out)
	}
	if code, out, _ := c.run("", "search", "查看所有用户"); code != 0 || !strings.Contains(out, "system_user_list") {
		t.Fatalf("search in Chinese: %d %s", code, out)
	}
	if code, out, _ := c.run("", "search", "zzzz"); code != 0 || !strings.Contains(out, "no tool") {
		t.Fatalf("search finding nothing: %d %s", code, out)
	}
	if code, _, _ := c.run("", "search"); code == 0 {
		t.Fatal("search without a query succeeded")
	}
}
