package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// selectionFlags declares --plugin, --tag and --source on cmd: a
// catalog.Selection, as POST /v1/plugins/perms and agents take one.
func selectionFlags(cmd *cobra.Command, sel *catalog.Selection) {
	f := cmd.Flags()
	f.StringArrayVar(&sel.Names, "plugin", nil, "a plugin by name (repeatable)")
	f.StringArrayVar(&sel.Tags, "tag", nil, "the plugins of a tag (repeatable)")
	f.Int64SliceVar(&sel.Sources, "source", nil, "the plugins an import source wrote, by source_id (repeatable; GET /v1/sources lists them)")
}

// fieldsError is a usage error naming each bad field.
func fieldsError(cmd *cobra.Command, fields []plugins.FieldError) error {
	msgs := make([]string, len(fields))
	for i, f := range fields {
		msgs[i] = f.Sentence()
	}
	return usagef("%s: %s", cmd.CommandPath(), strings.Join(msgs, "; "))
}

// permsCmd is `plugin perms`: the permissions a user needs to use
// plugins (issue 46), set in bulk like POST /v1/plugins/perms.
func permsCmd(cfg *config) *cobra.Command {
	var (
		sel  catalog.Selection
		none bool
	)
	cmd := &cobra.Command{
		Use:   "perms [--plugin NAME] [--tag T] [--source ID] (PERM... | --none)",
		Short: "Set the RuoYi permission strings a user needs to use plugins, one of which suffices (kept across syncs)",
		RunE: func(cmd *cobra.Command, args []string) error {
			fields := append(sel.Check("--"), plugins.CheckPerms("PERM", args)...)
			if sel.Empty() {
				fields = append(fields, plugins.FieldError{Field: "--plugin, --tag or --source", Message: "name the plugins to set"})
			}
			if none == (len(args) > 0) {
				fields = append(fields, plugins.FieldError{Field: "PERM", Message: "give the permission strings (system:user:list), or --none to clear them"})
			}
			if len(fields) > 0 {
				return fieldsError(cmd, fields)
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				cat, err := cliCatalog(ctx, cfg, st)
				if err != nil {
					return err
				}
				names, err := cat.SelectedNames(ctx, sel)
				if err != nil {
					return err
				}
				n, err := st.SetPluginsPerms(ctx, names, plugins.JoinPerms(args), "cli")
				if err != nil {
					return err
				}
				perms := strings.Join(args, ", ")
				if perms == "" {
					perms = "(none)"
				}
				recordChange(ctx, cmd, st, "plugin", api.Detail(api.OpPluginsPerms, "plugins", strings.Join(names, ", "), "perms", perms))
				fmt.Fprintf(cmd.OutOrStdout(), "set the perms of %d plugin(s) to [%s]\n", n, strings.Join(args, ", "))
				return nil
			})
		},
	}
	selectionFlags(cmd, &sel)
	cmd.Flags().BoolVar(&none, "none", false, "clear the plugins' perms (BLINDEXEC_TOOL_ACCESS decides for them)")
	return cmd
}

// cliCatalog is the catalog of st for a one-shot command: read once.
func cliCatalog(ctx context.Context, cfg *config, st *store.Store) (*catalog.Catalog, error) {
	log := slog.New(slog.DiscardHandler)
	w := store.NewWatcher(st, cfg.changePoll, log)
	if _, err := w.Poll(ctx); err != nil {
		return nil, err
	}
	return catalog.New(st, w, log), nil
}

// agentCmd manages agents (issue 46), as /v1/agents does.
func agentCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Manage agents: named selections of tools"}
	var (
		a        catalog.Agent
		disabled bool
	)
	add := &cobra.Command{
		Use:   "add NAME [--plugin NAME] [--tag T] [--source ID] [--perm P] [--description D] [--disabled]",
		Short: "Create an agent selecting tools by plugin name, tag and import source",
		Args:  argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Name = args[0]
			if disabled {
				a.Status = store.StatusDisabled
			}
			if fields := a.Check(); len(fields) > 0 {
				return fieldsError(cmd, fields)
			}
			row, err := catalog.AgentRow(&a)
			if err != nil {
				return err
			}
			row.CreateBy, row.UpdateBy = "cli", "cli"
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.CreateAgent(ctx, row); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "agent", api.Detail(api.OpAgentAdded, "name", a.Name))
				fmt.Fprintf(cmd.OutOrStdout(), "added agent %s\n", a.Name)
				return nil
			})
		},
	}
	selectionFlags(add, &a.Tools)
	add.Flags().StringArrayVar(&a.Perms, "perm", nil, "a RuoYi permission string needed to use the agent, one of which suffices (repeatable)")
	add.Flags().StringVar(&a.Description, "description", "", "what the agent is for")
	add.Flags().BoolVar(&disabled, "disabled", false, "create it disabled (status '1')")
	list := &cobra.Command{
		Use: "list", Short: "List agents and how many enabled tools each selects now", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withAgents(cmd, cfg, func(ctx context.Context, agents []*catalog.Agent, tools func(*catalog.Agent) []string) error {
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATUS\tTOOLS\tPERMS\tDESCRIPTION")
				for _, a := range agents {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", a.Name, statusWord(a.Enabled()), len(tools(a)), strings.Join(a.Perms, ","), a.Description)
				}
				return tw.Flush()
			})
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Print an agent and the enabled tools it selects now", Args: argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withAgents(cmd, cfg, func(ctx context.Context, agents []*catalog.Agent, tools func(*catalog.Agent) []string) error {
				for _, a := range agents {
					if a.Name == args[0] {
						return printJSON(cmd.OutOrStdout(), struct {
							*catalog.Agent
							ToolNames []string `json:"tool_names"`
						}{a, tools(a)})
					}
				}
				return &catalog.AgentError{Name: args[0]}
			})
		},
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete an agent", Args: argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.DeleteAgent(ctx, args[0]); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "agent", api.Detail(api.OpAgentDeleted, "name", args[0]))
				fmt.Fprintf(cmd.OutOrStdout(), "removed agent %s\n", args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(add, list, get, rm)
	return cmd
}

// withAgents hands fn the agents, by name, and what gives the enabled
// tools an agent selects now.
func withAgents(cmd *cobra.Command, cfg *config, fn func(context.Context, []*catalog.Agent, func(*catalog.Agent) []string) error) error {
	return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
		cat, err := cliCatalog(ctx, cfg, st)
		if err != nil {
			return err
		}
		enabled, err := cat.EnabledPlugins(ctx)
		if err != nil {
			return err
		}
		rows, err := st.ListAgents(ctx)
		if err != nil {
			return err
		}
		agents := make([]*catalog.Agent, len(rows))
		for i := range rows {
			if agents[i], err = catalog.AgentFromRow(&rows[i]); err != nil {
				return err
			}
		}
		return fn(ctx, agents, func(a *catalog.Agent) []string { return a.Tools.NamesIn(enabled) })
	})
}
