package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	openai "github.com/sashabaranov/go-openai"
	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/engine/loop"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

func chatCmd(cfg *config) *cobra.Command {
	var names string
	var user int64
	var model string
	var maxSteps int
	cmd := &cobra.Command{
		Use:   `chat --plugins a,b [--user ID] "message"`,
		Short: "Run one turn of the LLM loop against the configured endpoint, printing the steps as they happen",
		Args:  argsExactly(1, "a message"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cfg.llmBaseURL == "" {
				return usagef("chat: BLINDEXEC_LLM_BASE_URL is not set")
			}
			ctx := cmd.Context()
			log := cfg.logger()
			parts, err := cfg.engine(ctx, schemaRequire, log)
			if err != nil {
				return err
			}
			defer parts.close()
			var ps []*plugins.Plugin
			if names != "" {
				if ps, err = catalogPlugins(ctx, parts.store, strings.Split(names, ",")); err != nil {
					return err
				}
			}
			req := loop.Request{
				UserID:   user,
				Messages: []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: args[0]}},
				Plugins:  ps, Model: model,
				Options: loop.Options{MaxSteps: maxSteps, Stream: true},
			}
			out := cmd.OutOrStdout()
			runner := cfg.runner(parts.executor, log)
			runner.Budget = parts.quotas
			reply := runner.Run(ctx, req, printEvent(out))
			if reply.Error != nil && reply.Status != loop.StatusMaxSteps {
				return exitError{code: exitFailure, msg: reply.Error.Error()}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&names, "plugins", "", "catalog plugins the model may call, comma-separated")
	f.Int64Var(&user, "user", 0, "the user whose stored credentials apply")
	f.StringVar(&model, "model", "", "model name (default BLINDEXEC_LLM_MODEL)")
	f.IntVar(&maxSteps, "max-steps", 0, "bound on model calls (default 8)")
	return cmd
}

// catalogPlugins loads named, enabled plugins.
func catalogPlugins(ctx context.Context, st *store.Store, names []string) ([]*plugins.Plugin, error) {
	rows, err := st.GetPluginsByName(ctx, names)
	if err != nil {
		return nil, err
	}
	found := map[string]bool{}
	var out []*plugins.Plugin
	for i := range rows {
		p, err := catalog.PluginFromRow(&rows[i])
		if err != nil {
			return nil, err
		}
		found[p.Name] = true
		out = append(out, p)
	}
	for _, n := range names {
		if !found[n] {
			return nil, usagef("chat: no plugin named %q", n)
		}
	}
	return out, nil
}

// printEvent writes the run's progress: the model's text as it streams,
// one line per tool call, and the outcome.
func printEvent(w io.Writer) func(loop.Event) {
	return func(ev loop.Event) {
		switch d := ev.Data.(type) {
		case loop.MessageDelta:
			fmt.Fprint(w, d.Content)
		case loop.ToolStarted:
			fmt.Fprintf(w, "\n→ %s %s\n", d.Tool, d.Arguments)
		case loop.Step:
			line := fmt.Sprintf("← %s: %s", d.Tool, d.Status)
			if d.HTTPStatus != 0 {
				line += fmt.Sprintf(" (HTTP %d)", d.HTTPStatus)
			}
			if d.Error != "" {
				line += " " + d.Error
			}
			fmt.Fprintf(w, "%s, %d ms\n", line, d.LatencyMS)
		case *loop.Reply:
			fmt.Fprintf(w, "\n[%s: %d step(s), %d tokens]\n", d.Status, len(d.Steps), d.Usage.TotalTokens)
		}
	}
}
