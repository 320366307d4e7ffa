package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/auth"
	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/console"
	"github.com/blindexec/blindexec/engine"
	"github.com/blindexec/blindexec/engine/mcpserver"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
	"github.com/blindexec/blindexec/tracing"
)

func serveCmd(cfg *config) *cobra.Command {
	var noMigrate bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the HTTP API and the MCP endpoints (migrates the database first unless --no-migrate)",
		Args:  argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, again, stop := stopOnSignal(cmd.Context())
			defer stop()
			log := cfg.logger()
			if cfg.adminToken == "" && cfg.serviceToken == "" {
				log.Warn("neither BLINDEXEC_ADMIN_TOKEN nor BLINDEXEC_SERVICE_TOKEN is set: only per-user tokens will be accepted")
			}
			sch := schemaMigrate
			if noMigrate {
				sch = schemaAwait
			}
			cfg.spool = cfg.serveSpool
			// Listen at once: until the database is read, the gate answers
			// /readyz (and everything else) with 503 saying why.
			ln, err := net.Listen("tcp", cfg.addr)
			if err != nil {
				return err
			}
			// Requests derive from calls, which the shutdown cancels once
			// its grace is over.
			calls, cancelCalls := context.WithCancelCause(context.Background())
			defer cancelCalls(nil)
			gate := &startGate{operators: []string{cfg.adminToken, cfg.metricsToken}}
			hs := cfg.limits.httpServer(cfg.addr, gate)
			hs.BaseContext = func(net.Listener) context.Context { return calls }
			errc := make(chan error, 1)
			go func() { errc <- hs.Serve(ln) }()
			parts, err := cfg.engineWhenReachable(ctx, sch, log, gate)
			if err != nil {
				hs.Close()
				if ctx.Err() != nil {
					return nil // stopped before the database was reached
				}
				return err
			}
			defer parts.close()
			// The background loops outlive the signal: the drain and the
			// shutdown grace still serve, from caches kept fresh.
			loops, stopLoops := context.WithCancel(context.WithoutCancel(ctx))
			defer stopLoops()
			parts.executor.Limiter = cfg.limits.limiter
			parts.executor.Access = parts.access
			reg := prometheus.NewRegistry()
			if parts.executor.Metrics, err = engine.NewMetrics(reg); err != nil {
				return err
			}
			if parts.spool != nil {
				if err := parts.spool.Register(reg); err != nil {
					return err
				}
			}
			tr, err := tracing.New(ctx, cfg.tracing, versionLine())
			if err != nil {
				return err
			}
			defer func() {
				// What is left goes out, within a bound: a collector
				// that is down does not hold the exit.
				sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := tr.Shutdown(sctx); err != nil {
					log.Warn("tracing: spans not exported at exit", "err", err)
				}
			}()
			stateKey, _ := mcpserver.StateKey(cfg.masterKey) // none without a master key: see api.MCPConfig.StateKey
			srv := &api.Server{
				Store: parts.store, Creds: parts.creds, Executor: parts.executor, Connections: parts.conns,
				AdminToken: cfg.adminToken, ServiceToken: cfg.serviceToken, MetricsToken: cfg.metricsToken,
				Registry: reg, Logger: log, HTTPClient: parts.client,
				MCP: &api.MCPConfig{Manager: parts.mcp, PublicURL: cfg.publicURL, AllowStdio: cfg.mcpAllowStdio,
					ToolSearch: cfg.toolSearch, Sessions: cfg.mcpSessions, StateKey: stateKey},
				Runner:         cfg.runner(parts.executor, log),
				Changes:        parts.changes,
				Catalog:        parts.catalog,
				Access:         parts.access,
				Agents:         parts.agents,
				Deadlines:      cfg.limits.deadlines,
				Version:        versionLine(),
				OutageGrace:    cfg.outageGrace,
				MaxQueryChars:  cfg.toolSearch.MaxQueryChars,
				ImportMaxBytes: cfg.importMaxBytes,
				Confirm:        cfg.confirm,
				ConfirmTTL:     cfg.confirmTTL,
				ConfirmVia:     cfg.confirmVia,
				MCPOrigins:     cfg.mcpOrigins,
			}
			if tr != nil {
				srv.Tracer = tr.Tracer
				log.Info("tracing on", "collector", cfg.tracing.Host(), "protocol", cfg.tracing.Protocol)
			}
			go parts.changes.Run(loops)
			srv.Quota = parts.quotas
			if err := parts.quotas.Register(reg); err != nil {
				return err
			}
			quotasDone := make(chan struct{})
			go func() { parts.quotas.Run(loops); close(quotasDone) }()
			// The leases held go back at the end of Run: before the store closes.
			defer func() { stopLoops(); <-quotasDone }()
			go api.RetainPending(loops, parts.store, cfg.pendingRetention, log)
			// Sources imported before 00031 keep a password in their
			// location until sealed: at the first start that can seal.
			if n, err := importer.SealLocations(ctx, parts.store, parts.creds.Keyring()); err != nil {
				log.Warn("import sources: locations with userinfo not sealed", "err", err)
			} else if n > 0 {
				log.Info("import sources: userinfo of locations stored whole sealed under the master key", "sources", n)
			}
			replicas := cfg.replicas(parts, log)
			srv.Replicas = replicas
			replicasDone := make(chan struct{})
			go func() { replicas.Run(loops); close(replicasDone) }()
			// Its row goes at the end of Run: before the store closes.
			defer func() { stopLoops(); <-replicasDone }()
			srv.Semantic = cfg.embeddings.semantic(cfg.llmHTTP, parts.store)
			srv.Expansion = cfg.expansion(parts.store, log)
			if srv.OpenAPITools, err = cfg.openapiTools(log); err != nil {
				return err
			}
			hs.RegisterOnShutdown(srv.CloseStreams) // the /mcp sessions' streams would hold Shutdown
			con, err := console.New(srv, parts.store, cfg.masterKey, log)
			if err != nil {
				return err
			}
			con.TrustedProxies, con.BrowserURL = cfg.trustedProxies, cfg.browserURL
			gate.open(con.Handler(srv.Handler()))
			log.Info("blindexec serving", "addr", cfg.addr, "db", parts.store.Dialect())
			select {
			case err := <-errc:
				return err
			case <-ctx.Done():
			}
			if err := drain(ctx, cfg.shutdownDrain, srv.Stopping, again, errc, log); err != nil {
				return err
			}
			return shutdown(hs, cancelCalls, cfg.shutdownGrace, log)
		},
	}
	cmd.Flags().BoolVar(&noMigrate, "no-migrate", cfg.noMigrate, "do not migrate the database at start; /readyz answers 503 until it is (BLINDEXEC_NO_MIGRATE: true or false)")
	return cmd
}

// versionList is migration versions as their files number them: 00027, 00028.
func versionList(vs []int64) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%05d", v)
	}
	return strings.Join(out, ", ")
}

func migrateCmd(cfg *config) *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Bring the database schema up to date",
		Args:  argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := cfg.openStore(cmd.Context(), schemaAsIs)
			if err != nil {
				return err
			}
			defer st.Close()
			applied, err := st.MigrateApplied(cmd.Context())
			if err != nil {
				return err
			}
			if len(applied) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "migrated (%s): already up to date\n", st.Dialect())
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "migrated (%s): applied %s\n", st.Dialect(), versionList(applied))
			return nil
		},
	}
}

func pluginCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "plugin", Short: "Manage the plugin catalog: the tools the engine can execute"}
	var replace bool
	add := &cobra.Command{
		Use:   "add FILE",
		Short: "Add a plugin from a protocol v1 document (FILE or - for stdin; // comments allowed)",
		Args:  argsExactly(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(cmd, args[0])
			if err != nil {
				return err
			}
			p, err := plugins.Parse(data)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := catalog.CheckPlugin(ctx, st, p); err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				row, err := catalog.RowFromPlugin(p)
				if err != nil {
					return err
				}
				row.CreateBy, row.UpdateBy = "cli", "cli"
				err = st.CreatePlugin(ctx, row)
				op := api.OpPluginAdded
				if errors.Is(err, store.ErrDuplicate) && replace {
					op = api.OpPluginReplaced
					old, gerr := st.GetPlugin(ctx, p.Name)
					if gerr != nil {
						return gerr
					}
					row.ID, row.CreateBy, row.CreateTime = old.ID, old.CreateBy, old.CreateTime
					err = st.UpdatePlugin(ctx, row)
				}
				if errors.Is(err, store.ErrDuplicate) {
					return fmt.Errorf("a plugin named %q exists (use --replace)", p.Name)
				}
				if err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "plugin", api.Detail(op, "name", p.Name))
				verb := "added"
				if op == api.OpPluginReplaced {
					verb = "replaced"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s (required credentials: %s)\n", verb, p.Name, cmp.Or(strings.Join(p.Credentials(), ", "), "none"))
				for _, r := range p.InvisibleRemoved {
					fmt.Fprintf(cmd.OutOrStdout(), "  warning: %s\n", r)
				}
				return nil
			})
		},
	}
	add.Flags().BoolVar(&replace, "replace", false, "replace a plugin of the same name")
	list := &cobra.Command{
		Use: "list", Short: "List plugins", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				rows, err := st.ListPlugins(ctx, store.PluginFilter{})
				if err != nil {
					return err
				}
				why, err := leftOut(ctx, cfg, st)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATUS\tTYPE\tTITLE")
				for i := range rows {
					status, typ := statusWord(rows[i].Status != store.StatusDisabled), "?"
					if p, err := catalog.PluginFromRow(&rows[i]); err == nil {
						status, typ = statusWord(p.Enabled()), p.ExecType()
					}
					// A row written by hand that the catalog leaves out
					// (a column that does not decode, content the protocol
					// refuses) hides neither itself nor the others.
					if err := why[rows[i].Name]; err != nil {
						status = "left out"
						warnLeftOut(cmd.ErrOrStderr(), rows[i].Name, err)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", rows[i].Name, status, typ, rows[i].Title)
				}
				return tw.Flush()
			})
		},
	}
	get := &cobra.Command{
		Use: "get NAME", Short: "Print a plugin's document", Args: argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				row, err := st.GetPlugin(ctx, args[0])
				if err != nil {
					return err
				}
				p, err := catalog.PluginFromRow(row)
				if err != nil {
					return err
				}
				if err := printJSON(cmd.OutOrStdout(), p); err != nil {
					return err
				}
				// The document stays on stdout as written; why no caller
				// sees it goes beside it.
				why, err := leftOut(ctx, cfg, st)
				if err == nil && why[row.Name] != nil {
					warnLeftOut(cmd.ErrOrStderr(), row.Name, why[row.Name])
				}
				return err
			})
		},
	}
	status := func(use, short, value string) *cobra.Command {
		return &cobra.Command{
			Use: use + " NAME", Short: short, Args: argsExactly(1, "NAME"),
			RunE: func(cmd *cobra.Command, args []string) error {
				return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
					if err := st.SetPluginStatus(ctx, args[0], value, "cli"); err != nil {
						return err
					}
					op := api.OpPluginEnabled
					if value == store.StatusDisabled {
						op = api.OpPluginDisabled
					}
					recordChange(ctx, cmd, st, "plugin", api.Detail(op, "name", args[0]))
					fmt.Fprintf(cmd.OutOrStdout(), "%sd %s\n", use, args[0])
					return nil
				})
			},
		}
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a plugin", Args: argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.DeletePlugin(ctx, args[0]); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "plugin", api.Detail(api.OpPluginDeleted, "name", args[0]))
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
	}
	consequential := &cobra.Command{
		Use:   "consequential true|false|derived NAME...",
		Short: "Classify plugins: whether a call waits for a person's confirmation (kept across syncs)",
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef("%s: expected true|false|derived and at least one NAME", cmd.CommandPath())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var value *string // derived
			if args[0] != "derived" {
				if args[0] != "true" && args[0] != "false" {
					return usagef("%s: the first argument is true, false or derived, not %q", cmd.CommandPath(), args[0])
				}
				c := args[0] == "true"
				value = catalog.ConsequentialColumn(&c)
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				n, err := st.SetPluginsConsequential(ctx, args[1:], value, "cli")
				if err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "plugin", api.Detail(api.OpPluginsClassified, "plugins", strings.Join(args[1:], ", "), "consequential", args[0]))
				fmt.Fprintf(cmd.OutOrStdout(), "classified %d plugin(s) consequential=%s\n", n, args[0])
				return nil
			})
		},
	}
	cmd.AddCommand(add, list, get, status("enable", "Enable a plugin (status '0')", store.StatusEnabled),
		status("disable", "Disable a plugin (status '1')", store.StatusDisabled), rm, consequential, permsCmd(cfg))
	return cmd
}

func credCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "cred", Short: "Manage users' credentials (encrypted at rest)"}
	set := &cobra.Command{
		Use: "set USER KEY", Short: "Store a credential; the value is read from stdin", Args: argsExactly(2, "USER KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			user, err := parseUser(args[0])
			if err != nil {
				return err
			}
			value, err := readSecret(cmd.InOrStdin())
			if err != nil {
				return err
			}
			return withCreds(cmd, cfg, keysRecord, func(ctx context.Context, st *store.Store, cs *auth.CredentialService) error {
				if err := cs.Set(ctx, user, args[1], value, "cli"); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "credential", api.Detail(api.OpCredentialSet, "user", args[0], "key", args[1]))
				fmt.Fprintf(cmd.OutOrStdout(), "stored %s for user %d\n", args[1], user)
				return nil
			})
		},
	}
	list := &cobra.Command{
		Use: "list USER", Short: "List a user's credentials, values masked", Args: argsExactly(1, "USER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			user, err := parseUser(args[0])
			if err != nil {
				return err
			}
			return withCreds(cmd, cfg, keysVerify, func(ctx context.Context, st *store.Store, cs *auth.CredentialService) error {
				list, err := cs.List(ctx, user)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "KEY\tVALUE\tKEY_ID\tUPDATED")
				for _, c := range list {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Key, c.Masked, c.KeyID, c.UpdateTime.Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	rm := &cobra.Command{
		Use: "rm USER KEY", Short: "Delete a credential", Args: argsExactly(2, "USER KEY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			user, err := parseUser(args[0])
			if err != nil {
				return err
			}
			return withCreds(cmd, cfg, keysVerify, func(ctx context.Context, st *store.Store, cs *auth.CredentialService) error {
				if err := cs.Delete(ctx, user, args[1]); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "credential", api.Detail(api.OpCredentialDeleted, "user", args[0], "key", args[1]))
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s for user %d\n", args[1], user)
				return nil
			})
		},
	}
	rotate := &cobra.Command{
		Use: "rotate", Short: "Re-encrypt every credential under the newest master key", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				cs, err := cfg.credentials(ctx, st, keysRecord)
				if err != nil {
					return err
				}
				n, err := cs.Rotate(ctx)
				if err != nil {
					return err
				}
				// Provider secrets and connection tokens are in the vault's
				// format too.
				conns, err := cfg.connections(st, nil)
				if err != nil {
					return err
				}
				m, err := conns.Rotate(ctx)
				if err != nil {
					return err
				}
				// And the URLs kept for import sources with userinfo.
				u, err := importer.RotateURLs(ctx, st, cs.Keyring())
				if err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "credential", api.Detail(api.OpCredentialsRotated))
				fmt.Fprintf(cmd.OutOrStdout(), "re-encrypted %d credential(s), %d OAuth provider secret(s) or connection(s) and %d import source URL(s)\n", n, m, u)
				return nil
			})
		},
	}
	cmd.AddCommand(set, list, rm, rotate)
	return cmd
}

func tokenCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "token", Short: "Manage per-user API tokens (stored hashed)"}
	var user int64
	var name string
	var ttl time.Duration
	var consoleOnly bool
	create := &cobra.Command{
		Use: "create", Short: "Issue a token for --user; it is printed once", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user <= 0 {
				return usagef("token create: --user is required (a positive user id)")
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				scope := ""
				if consoleOnly {
					scope = store.TokenScopeConsole
				}
				tok, row, err := api.IssueToken(ctx, st, user, name, ttl, scope)
				if errors.Is(err, api.ErrTokenLifetime) {
					return usagef("token create: --ttl %s: %v", ttl, err)
				}
				if err != nil {
					return err
				}
				expires := ""
				if ttl > 0 {
					expires = ttl.String()
				}
				recordChange(ctx, cmd, st, "token", api.Detail(api.OpTokenCreated, "id", strconv.FormatInt(row.ID, 10),
					"user", strconv.FormatInt(user, 10), "name", name, "scope", scope, "expires", expires))
				fmt.Fprintf(cmd.OutOrStdout(), "%s\n", tok)
				fmt.Fprintf(cmd.ErrOrStderr(), "token %d for user %d: shown once, keep it\n", row.ID, user)
				return nil
			})
		},
	}
	create.Flags().Int64Var(&user, "user", 0, "the user the token acts for")
	create.Flags().StringVar(&name, "name", "", "a label")
	create.Flags().DurationVar(&ttl, "ttl", 0, "lifetime (e.g. 720h); none when 0")
	create.Flags().BoolVar(&consoleOnly, "console-only", false, "signs in to the console only (refused on /v1 and /mcp): the token whose sessions may approve under BLINDEXEC_CONFIRM_VIA=console")
	var listUser int64
	list := &cobra.Command{
		Use: "list", Short: "List tokens", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				var uid *int64
				if listUser > 0 {
					uid = &listUser
				}
				toks, err := st.ListTokens(ctx, uid)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tUSER\tNAME\tPREFIX\tEXPIRES\tSCOPE")
				for _, t := range toks {
					exp := "never"
					if t.ExpireTime != nil {
						exp = t.ExpireTime.Format(time.RFC3339)
					}
					scope := "api"
					if t.Scope != "" {
						scope = t.Scope
					}
					fmt.Fprintf(tw, "%d\t%d\t%s\t%s…\t%s\t%s\n", t.ID, t.UserID, t.Name, t.Prefix, exp, scope)
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().Int64Var(&listUser, "user", 0, "only this user's tokens")
	revoke := &cobra.Command{
		Use: "revoke ID", Short: "Revoke a token", Args: argsExactly(1, "ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return usagef("token revoke: ID %q is not an integer", args[0])
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.DeleteToken(ctx, id); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "token", api.Detail(api.OpTokenRevoked, "id", args[0]))
				fmt.Fprintf(cmd.OutOrStdout(), "revoked %d\n", id)
				return nil
			})
		},
	}
	cmd.AddCommand(create, list, revoke)
	return cmd
}

func toolsCmd(cfg *config) *cobra.Command {
	return &cobra.Command{
		Use:   "tools [NAME...]",
		Short: "Print the OpenAI tools JSON the LLM would see (no execution, no auth, no fixed params)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				var rows []store.Plugin
				var err error
				if len(args) > 0 {
					rows, err = st.GetPluginsByName(ctx, args)
				} else {
					rows, err = st.ListPlugins(ctx, store.PluginFilter{Status: store.StatusEnabled})
				}
				if err != nil {
					return err
				}
				tools := make([]plugins.Tool, 0, len(rows))
				ps, err := decoded(ctx, cmd.ErrOrStderr(), cfg, st, rows)
				if err != nil {
					return err
				}
				for _, p := range ps {
					tools = append(tools, p.Tool(nil))
				}
				return printJSON(cmd.OutOrStdout(), tools)
			})
		},
	}
}

// warnLeftOut says on w that the row named is left out of the catalog,
// and why.
func warnLeftOut(w io.Writer, name string, why error) {
	fmt.Fprintf(w, "warning: %s\n", leftOutLine(name, why))
}

func leftOutLine(name string, why error) string {
	return fmt.Sprintf("plugin %s is left out of the catalog (no caller sees or calls it): %v", name, why)
}

// leftOut is why the catalog leaves out each row it leaves out
// (catalog.Catalog.LeftOut), by the row's name.
func leftOut(ctx context.Context, cfg *config, st *store.Store) (map[string]error, error) {
	cat, err := cliCatalog(ctx, cfg, st)
	if err != nil {
		return nil, err
	}
	return cat.LeftOut(ctx)
}

// decoded is the plugins of rows as the catalog holds them, their
// sources included; a row it leaves out (a JSON column that does not
// decode, content the protocol refuses: rows written by hand) is no tool
// any caller sees, so it is left out here with a warning on w naming it
// and why, not the whole answer.
func decoded(ctx context.Context, w io.Writer, cfg *config, st *store.Store, rows []store.Plugin) ([]*plugins.Plugin, error) {
	cat, err := cliCatalog(ctx, cfg, st)
	if err != nil {
		return nil, err
	}
	why, err := cat.LeftOut(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*plugins.Plugin, 0, len(rows))
	for i := range rows {
		if why[rows[i].Name] != nil {
			warnLeftOut(w, rows[i].Name, why[rows[i].Name])
			continue
		}
		p, err := cat.Plugin(ctx, rows[i].Name)
		if errors.Is(err, store.ErrNotFound) {
			continue // removed since the rows were read
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// statusWord is a row's status as the lists print it: the column's "0"
// and "1" read as their meaning.
func statusWord(enabled bool) string {
	if enabled {
		return "enabled"
	}
	return "disabled"
}

func execCmd(cfg *config) *cobra.Command {
	var argsJSON, pluginFile string
	var user int64
	var creds []string
	cmd := &cobra.Command{
		Use:   "exec NAME --args JSON [--user ID] [--cred KEY=VALUE]... [--plugin FILE]",
		Short: "Execute one blind call and print the result JSON (exit 0 ok, 1 tool error, 2 bad usage)",
		Args:  argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var probe any
			if err := json.Unmarshal([]byte(argsJSON), &probe); err != nil {
				return usagef("exec: --args is not valid JSON (%v): give the arguments as one JSON object, e.g. --args '{\"keyword\":\"x\"}'", err)
			}
			payloadCreds, err := parseCreds(creds)
			if err != nil {
				return err
			}
			var inline *plugins.Plugin
			if pluginFile != "" {
				data, err := readInput(cmd, pluginFile)
				if err != nil {
					return usageError{err}
				}
				if inline, err = plugins.Parse(data); err != nil {
					return usageError{fmt.Errorf("%s: %w", pluginFile, err)}
				}
				if inline.Name != args[0] {
					return usagef("exec: NAME %q does not match the name %q in %s", args[0], inline.Name, pluginFile)
				}
			}
			log := cfg.logger()
			parts, err := cfg.engine(cmd.Context(), schemaRequire, log)
			if err != nil {
				return err
			}
			defer parts.close()
			p := inline
			if p == nil {
				row, err := parts.store.GetPlugin(cmd.Context(), args[0])
				if errors.Is(err, store.ErrNotFound) {
					return usagef("exec: no plugin named %q (add it, or give --plugin FILE)", args[0])
				}
				if err != nil {
					return err
				}
				// A row the catalog leaves out is no tool: say why, as
				// plugin get does, not that it was disabled.
				why, err := parts.catalog.LeftOut(cmd.Context())
				if err != nil {
					return err
				}
				if why[row.Name] != nil {
					return exitError{code: exitFailure, msg: leftOutLine(row.Name, why[row.Name])}
				}
				if p, err = catalog.PluginFromRow(row); err != nil {
					return err
				}
			}
			// The operator, who holds the database, is the catalog's
			// administrator: an inline plugin here is not bound to it.
			res, err := parts.executor.Execute(cmd.Context(), engine.Call{
				Plugin: p, Arguments: json.RawMessage(argsJSON), UserID: user, Credentials: payloadCreds,
				Inline: inline != nil, Owner: engine.OwnerAdmin,
			})
			if res != nil {
				if perr := printJSON(cmd.OutOrStdout(), res); perr != nil {
					return perr
				}
			}
			var refused *engine.RefusedError
			switch {
			case errors.As(err, &refused):
				return exitError{code: exitFailure, msg: refused.Code + ": " + refused.Message}
			case err != nil:
				return err
			case !res.OK:
				return exitError{code: exitFailure, msg: toolErrorLine(res)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&argsJSON, "args", "{}", "the arguments, a JSON object")
	cmd.Flags().Int64Var(&user, "user", 0, "the user whose stored credentials apply")
	cmd.Flags().StringArrayVar(&creds, "cred", nil, "a credential KEY=VALUE (wins over the store; repeatable)")
	cmd.Flags().StringVar(&pluginFile, "plugin", "", "execute this plugin document instead of a catalog entry")
	return cmd
}

func toolErrorLine(res *engine.Result) string {
	if res.Error != nil {
		return fmt.Sprintf("%s: %s", res.Error.Code, res.Error.Message)
	}
	return fmt.Sprintf("HTTP %d", res.HTTPStatus)
}

func withStore(cmd *cobra.Command, cfg *config, fn func(context.Context, *store.Store) error) error {
	st, err := cfg.openStore(cmd.Context(), schemaRequire)
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(cmd.Context(), st)
}

func withCreds(cmd *cobra.Command, cfg *config, check keyCheck, fn func(context.Context, *store.Store, *auth.CredentialService) error) error {
	return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
		cs, err := cfg.credentials(ctx, st, check)
		if err != nil {
			return err
		}
		return fn(ctx, st, cs)
	})
}

func parseUser(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, usagef("USER %q is not a positive integer user id", s)
	}
	return n, nil
}

// readSecret reads a credential value from stdin: the whole input, less
// one trailing newline (what `echo` or a terminal adds).
func readSecret(r io.Reader) (string, error) {
	b, err := io.ReadAll(bufio.NewReader(io.LimitReader(r, 64<<10)))
	if err != nil {
		return "", fmt.Errorf("read the value from stdin: %w", err)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if s == "" {
		return "", usagef("cred set: no value on stdin")
	}
	return s, nil
}

func readInput(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		return io.ReadAll(cmd.InOrStdin())
	}
	return os.ReadFile(name)
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
