package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/toolsearch"
)

// searchCmd searches the enabled catalog as GET /v1/tools/search does:
// the same index, the same JSON with --json.
func searchCmd(cfg *config) *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "search [--limit N] [--json] QUERY",
		Short: "Find the tools of the catalog that fit a request (the tool search the LLM loop and MCP use)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			query := strings.Join(args, " ")
			if limit < 1 {
				return usageError{fmt.Errorf("--limit: %d is not a positive number", limit)}
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				rows, err := st.ListPlugins(ctx, store.PluginFilter{Status: store.StatusEnabled})
				if err != nil {
					return err
				}
				ps, err := decoded(ctx, cmd.ErrOrStderr(), cfg, st, rows)
				if err != nil {
					return err
				}
				ix, err := toolsearch.New(ps)
				if err != nil {
					return err
				}
				start := time.Now()
				rs, total := ix.Rank(query, min(limit, toolsearch.MaxLimit))
				took := time.Since(start)
				if asJSON {
					return printJSON(cmd.OutOrStdout(), api.NewSearchResponse(rs, total, 0, took))
				}
				if len(rs) == 0 {
					fmt.Fprintf(cmd.OutOrStdout(), "no tool of the %d enabled matches %q\n", ix.Len(), query)
					return nil
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SCORE\tNAME\tTITLE")
				for _, r := range rs {
					fmt.Fprintf(tw, "%.2f\t%s\t%s\n", r.Score, r.Name, r.Title)
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().IntVar(&limit, "limit", toolsearch.DefaultLimit, "the number of tools to return (at most 50)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer of GET /v1/tools/search")
	return cmd
}

// embeddingsSettings are the optional semantic ranking of tool search: an
// OpenAI-compatible embeddings endpoint, operator configuration like the
// LLM's and, like it, not under the egress deny (BLINDEXEC_EMBEDDINGS_URL,
// _MODEL, _API_KEY).
type embeddingsSettings struct{ url, apiKey, model string }

// semantic is the ranking e configures, nil when no URL is set. client
// nil: a plain one.
func (e embeddingsSettings) semantic(client *http.Client, st *store.Store) *toolsearch.Semantic {
	if e.url == "" {
		return nil
	}
	if client == nil {
		client = &http.Client{Timeout: time.Minute}
	}
	// The endpoint may echo the key it was sent: masked before an error
	// quotes it into a log line.
	masked := *client
	masked.Transport = auth.EchoMasking(client.Transport, toolsearch.MaxEmbeddingsAnswer)
	client = &masked
	return &toolsearch.Semantic{
		Embedder: &toolsearch.OpenAIEmbedder{BaseURL: e.url, Model: e.model, APIKey: e.apiKey, HTTP: client},
		Store:    st,
		Model:    e.model,
	}
}
