package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/blindexec/blindexec/plugins/openapiquery"
)

// benchQuery (issue 6.7): the OpenAPI query tools on GitHub's REST API
// description: the index build, then each tool's time per call on the warm
// index, JSON encoding of the answer included (as the MCP server sends it).
func benchQuery(ctx context.Context, o benchOpts) error {
	spec, err := githubSpec(o)
	if err != nil {
		return err
	}
	t0 := time.Now()
	cache := openapiquery.NewCache(nil, 0)
	idx, info, err := cache.Get(ctx, spec)
	if err != nil {
		return err
	}
	build := time.Since(t0)
	// The second fetch hashes the file and reuses the index.
	t1 := time.Now()
	_, again, err := cache.Get(ctx, spec)
	if err != nil {
		return err
	}
	reuse := time.Since(t1)
	if !again.Reused {
		return fmt.Errorf("the second fetch of an unchanged document parsed it again")
	}

	ops := idx.Operations()
	ids := make([]string, 0, len(ops))
	var queries []string
	for _, op := range ops {
		id := op.OperationID
		if id == "" {
			id = op.Method + " " + op.Path
		}
		ids = append(ids, id)
		// A query an agent would type: two words of the summary.
		if w := strings.Fields(op.Summary); len(w) >= 2 {
			queries = append(queries, w[0]+" "+w[1])
		}
	}
	type tool struct {
		name string
		call func(i int) (any, error)
		n    int
	}
	tools := []tool{
		{"search_operations", func(i int) (any, error) {
			return idx.SearchOperations(openapiquery.Query{Text: queries[i], Match: openapiquery.AllFields}, openapiquery.DefaultLimit)
		}, len(queries)},
		{"search_operations (empty query: list all)", func(int) (any, error) {
			return idx.SearchOperations(openapiquery.Query{Match: openapiquery.AllFields}, openapiquery.DefaultLimit)
		}, 200},
		{"get_request_schema", func(i int) (any, error) { return idx.RequestSchema(ids[i]) }, len(ids)},
		{"get_response_schema", func(i int) (any, error) { return idx.ResponseSchema(ids[i]) }, len(ids)},
	}
	fmt.Printf("== OpenAPI query tools on GitHub's REST API description (%s): %d operations, %.1f MB\n",
		octokitOpenAPI, len(ops), float64(info.Bytes)/(1<<20))
	fmt.Printf("   index build (fetch, sha256, parse, index): %s; a second fetch with the same sha256 reuses it: %s\n",
		round(build), round(reuse))
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "tool\tcalls\tp50\tp99\tmax\ttarget p99 < 5 ms\t\n")
	for _, tl := range tools {
		d := make([]time.Duration, 0, tl.n)
		for i := 0; i < tl.n; i++ {
			s := time.Now()
			v, err := tl.call(i)
			if err != nil {
				return fmt.Errorf("%s: %w", tl.name, err)
			}
			if _, err := json.Marshal(v); err != nil {
				return fmt.Errorf("%s: %w", tl.name, err)
			}
			d = append(d, time.Since(s))
		}
		sortDurations(d)
		p99 := quantile(d, 0.99)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t\n", tl.name, len(d), round(quantile(d, 0.5)), round(p99), round(d[len(d)-1]),
			verdict(p99 < 5*time.Millisecond))
	}
	tw.Flush()
	fmt.Println()
	return nil
}
