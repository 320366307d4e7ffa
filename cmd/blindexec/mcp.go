package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/access"
	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/confirm"
	enginemcp "github.com/blindexec/blindexec/engine/mcp"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/engine/questions"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/plugins/mcpimport"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

func mcpCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "MCP: registered servers, the catalog as an MCP server, the OpenAPI query tools"}
	cmd.AddCommand(mcpServerCmd(cfg), mcpServeCmd(cfg), mcpOpenAPICmd(cfg))
	return cmd
}

func mcpServerCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "server", Short: "Register, list and remove MCP servers"}
	var spec enginemcp.ServerSpec
	var headers []string
	var authJSON string
	add := &cobra.Command{
		Use:   "add NAME (--url URL [--transport sse] | -- COMMAND [ARGS...])",
		Short: "Register an MCP server: streamable HTTP or SSE by URL, or a stdio command after --",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 1 {
				return usagef("mcp server add: expected NAME")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			spec.Name = args[0]
			if len(args) > 1 {
				spec.Transport, spec.Command = "stdio", args[1:]
			}
			if spec.URL == "" && len(spec.Command) == 0 {
				return usagef("mcp server add: give --url URL, or -- COMMAND [ARGS...] for a stdio server")
			}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, "=")
				if !ok {
					return usagef("mcp server add: --header %q: expected NAME=VALUE", k)
				}
				if spec.Headers == nil {
					spec.Headers = map[string]string{}
				}
				spec.Headers[k] = v
			}
			if authJSON != "" {
				var a plugins.AuthConfig
				if err := json.Unmarshal([]byte(authJSON), &a); err != nil {
					return usagef("mcp server add: --auth: %v", err)
				}
				spec.AuthConfig = &a
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				row, err := enginemcp.Register(ctx, st, spec, "cli")
				if err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "mcp_server", api.Detail(api.OpMCPServerAdded, "name", row.Name, "url", api.SafeURL(row.URL)))
				fmt.Fprintf(cmd.OutOrStdout(), "registered %s (mcp_id %s)\n", row.Name, row.ID)
				return nil
			})
		},
	}
	f := add.Flags()
	f.StringVar(&spec.URL, "url", "", "the server's URL (streamable HTTP or SSE)")
	f.StringVar(&spec.Transport, "transport", "", "streamable_http (default for --url) or sse")
	f.StringVar(&spec.ID, "id", "", "the mcp_id (a UUID when empty)")
	f.StringArrayVar(&headers, "header", nil, "a static header NAME=VALUE (repeatable)")
	f.BoolVar(&spec.Trusted, "trusted", false, "vouch for the server: its tools' readOnlyHint may make them not consequential (untrusted, annotations only raise a tool's class)")
	f.StringVar(&authJSON, "auth", "", `auth_config JSON, as a plugin's (e.g. {"type":"bearer","token":"MED_TOKEN"})`)

	list := &cobra.Command{
		Use: "list", Short: "List registered MCP servers", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				rows, err := st.ListMCPServers(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "MCP_ID\tNAME\tTRANSPORT\tTARGET\tSTATUS")
				for _, r := range rows {
					target := r.URL
					if argv, err := r.Argv(); target == "" && err == nil {
						target = strings.Join(argv, " ")
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Name, r.Transport, target, statusWord(r.Status == store.StatusEnabled))
				}
				return tw.Flush()
			})
		},
	}
	rm := &cobra.Command{
		Use: "rm SERVER", Short: "Remove a registered MCP server (by id or name)", Args: argsExactly(1, "SERVER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				row, err := st.GetMCPServer(ctx, args[0])
				if err != nil {
					return err
				}
				disabled, err := st.DeleteMCPServer(ctx, row.ID, "cli")
				if err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "mcp_server", api.Detail(api.OpMCPServerDeleted, "id", row.Name))
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", row.Name)
				for _, name := range disabled {
					fmt.Fprintf(cmd.OutOrStdout(), "  disabled plugin %s (it calls the removed server)\n", name)
				}
				return nil
			})
		},
	}
	cmd.AddCommand(add, list, rm)
	return cmd
}

// importMCPCmd imports (syncs) an MCP server's tools as plugins.
func importMCPCmd(cfg *config) *cobra.Command {
	var user int64
	var creds []string
	cmd := &cobra.Command{
		Use:   "mcp SERVER",
		Short: "Import (sync) an MCP server's tools as plugins: a registered server's id or name, or a URL (registered on the way)",
		Args:  argsExactly(1, "SERVER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			given, err := parseCreds(creds)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			parts, err := cfg.engine(ctx, schemaRequire, cfg.logger())
			if err != nil {
				return err
			}
			defer parts.close()
			ref := args[0]
			if openapi.IsURL(ref) { // its scheme in any case (onerow81)
				row, err := enginemcp.Register(ctx, parts.store, enginemcp.ServerSpec{Name: mcpimport.ServerNameFromURL(ref), URL: ref}, "cli")
				if err != nil && !errors.Is(err, store.ErrDuplicate) {
					return err
				}
				if row != nil {
					ref = row.ID
				} else {
					ref = mcpimport.ServerNameFromURL(ref)
				}
			}
			// The user's stored keys go only where they were given for,
			// as for the API's import (Manager.Credentials).
			all, err := parts.mcp.Credentials(ctx, ref, user, given, parts.creds)
			if err != nil {
				return err
			}
			rep, err := importer.MCPServer(ctx, parts.store, parts.mcp, ref, all, importer.MCPOptions{By: "cli", MaxBytes: cfg.importMaxBytes})
			if err != nil {
				return err
			}
			if len(rep.Added)+len(rep.Updated)+len(rep.Disabled) > 0 {
				recordChange(ctx, cmd, parts.store, "plugin", api.Detail(api.OpImportMCP, "server", rep.Server))
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s: added %d, updated %d, disabled %d, unchanged %d, failed %d\n", rep.Server,
				len(rep.Added), len(rep.Updated), len(rep.Disabled), len(rep.Unchanged), len(rep.Failed))
			printMarked(w, marked{"+", rep.Added}, marked{"~", rep.Updated}, marked{"-", rep.Disabled})
			for _, f := range rep.Failed {
				fmt.Fprintf(w, "  ! %s: %s\n", f.Tool, f.Error)
			}
			for _, warn := range rep.Warnings {
				fmt.Fprintf(w, "  warning: %s\n", warn)
			}
			imported := len(rep.Added) + len(rep.Updated) + len(rep.Unchanged)
			switch {
			case len(rep.Failed) > 0 && imported == 0:
				return exitError{code: exitFailure, msg: fmt.Sprintf("no tool imported: %d failed", len(rep.Failed))}
			case len(rep.Failed) > 0:
				return exitError{code: exitPartial, msg: fmt.Sprintf("partial import: %d tool(s) failed", len(rep.Failed))}
			}
			return nil
		},
	}
	cmd.Flags().Int64Var(&user, "user", 0, "the user whose stored credentials the server's auth config reads")
	cmd.Flags().StringArrayVar(&creds, "cred", nil, "a credential KEY=VALUE for the server (repeatable)")
	return cmd
}

func mcpServeCmd(cfg *config) *cobra.Command {
	var stdio bool
	var agent string
	cmd := &cobra.Command{
		Use:   "serve --stdio [--agent NAME]",
		Short: "Serve the enabled plugins as MCP tools over stdio, executed blind for the user in " + mcpserver.EnvUser,
		Args:  argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stdio {
				return usagef("mcp serve: only --stdio is offered here; `blindexec serve` serves /mcp over HTTP")
			}
			// stdout carries the protocol: logs go to stderr only.
			log := cfg.logger()
			if cfg.mcpUser == 0 {
				// Else the first sign is a tool's missing_credentials.
				log.Warn("acting for no user: stored credentials do not apply; set " + mcpserver.EnvUser + " to the user whose credentials the tools use")
			}
			parts, err := cfg.engine(cmd.Context(), schemaRequire, log)
			if err != nil {
				return err
			}
			defer parts.close()
			parts.executor.Access = parts.access
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			go parts.changes.Run(ctx)
			go parts.quotas.Run(ctx) // leases left idle go back, as under serve
			go api.RetainPending(ctx, parts.store, cfg.pendingRetention, log)
			// An upstream's questions the client cannot be asked wait on the
			// approval page, answered on any replica.
			opts := mcpserver.Options{Search: cfg.toolSearch, Logger: log, Access: parts.access, Inbox: &questions.Inbox{Store: parts.store}}
			if cfg.confirm != confirm.Never {
				// Decisions come through the database: POST /v1/pending/{id} on any replica.
				opts.Gate = &api.MCPGate{Store: parts.store, Confirm: cfg.confirm, TTL: cfg.confirmTTL,
					PublicURL: cfg.publicURL, ViaConsole: cfg.confirmVia == "console", Logger: log}
			}
			if parts.conns != nil {
				opts.Connector = api.StartURLs{Connections: parts.conns}
			}
			if key, err := mcpserver.StateKey(cfg.masterKey); err == nil {
				opts.RoundTrips = &mcpserver.RoundTrips{Key: key, Claims: parts.store}
			}
			var cat mcpserver.Catalog = parts.catalog
			if agent != "" {
				// The agent's tools only, if the user may use the agent:
				// refused at start, as /mcp/agents/{name} refuses.
				sub := access.Subject{User: cfg.mcpUser, Agent: agent}
				if _, err := parts.access.UseAgent(ctx, sub); err != nil {
					return err
				}
				// A call of a catalog tool outside it is the executor's to
				// refuse and record, as over /mcp/agents/{name}.
				cat, opts.Agent, opts.Row = parts.agents.View(agent), agent, parts.catalog.Row
			}
			svc := mcpserver.NewService(cat, parts.executor, opts)
			parts.changes.OnChange(func(old, new store.Versions) {
				if new.Plugins != old.Plugins || new.Agents != old.Agents && agent != "" || new.Grants != old.Grants {
					svc.Changed()
				}
			})
			return svc.ServeStdio(ctx, cfg.mcpUser)
		},
	}
	cmd.Flags().BoolVar(&stdio, "stdio", false, "speak MCP on stdin and stdout")
	cmd.Flags().StringVar(&agent, "agent", "", "serve the tools of this agent only (those the user may use within it)")
	return cmd
}

// parseCreds reads --cred KEY=VALUE flags. A flag without "=" is not
// quoted: it is most likely a value typed without its key.
func parseCreds(kvs []string) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for i, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("--cred flag %d of %d: expected KEY=VALUE, got no key (its text is not shown: it may be a secret)", i+1, len(kvs))
		}
		out[k] = v
	}
	return out, nil
}
