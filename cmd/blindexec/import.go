package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/importer"
	"github.com/blindexec/blindexec/internal/redact"
	"github.com/blindexec/blindexec/plugins/openapi"
	"github.com/blindexec/blindexec/store"
)

// Exit status of a partial import: some operations failed, the rest
// imported.
const exitPartial = 3

func importCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "import", Short: "Import plugins from an OpenAPI document or an MCP server"}
	cmd.AddCommand(importOpenAPICmd(cfg), importMCPCmd(cfg), importAliasesCmd(cfg))
	return cmd
}

func importOpenAPICmd(cfg *config) *cobra.Command {
	var opts openapi.Options
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "openapi SOURCE",
		Short: "Import (sync) one plugin per operation of an OpenAPI 3.0/3.1 or Swagger 2.0 document: a file, a URL or - for stdin",
		Long: `Import is a sync: the same bytes change nothing; a changed document reports added,
changed and removed operations (removed ones are disabled, not deleted). Exit status:
0 every selected operation imported, 3 some failed (each reported with its reason), 1 none.`,
		Args: argsExactly(1, "SOURCE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			src := args[0]
			progress := progressWriter(cmd.ErrOrStderr())
			shown := redact.Location(src) // a URL's userinfo and query credentials are never printed nor stored
			st, err := cfg.openStore(ctx, schemaRequire)
			if err != nil {
				return err
			}
			defer st.Close()
			creds, err := cfg.credentials(ctx, st, keysVerify)
			if err != nil {
				return err
			}
			fmt.Fprintf(progress, "loading %s…\n", shown)
			var data []byte
			fetched := src
			if src == "-" {
				data, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), openapi.MaxDocumentBytes+1))
			} else {
				if fetched, err = importer.FetchURL(ctx, st, creds.Keyring(), src, opts.Source); err != nil {
					return err
				}
				client, cerr := cfg.egressClient(fetched) // the operator's own URL
				if cerr != nil {
					return cerr
				}
				data, err = openapi.Fetch(ctx, client, fetched)
			}
			if err != nil {
				return err
			}
			doc, err := openapi.Load(data, shown)
			if err != nil {
				return err
			}
			if openapi.IsURL(src) {
				opts.SourceURL = fetched
			}
			opts.MaxBytes = cfg.importMaxBytes
			fmt.Fprintf(progress, "converting and writing %q (OpenAPI %s)…\n", doc.Title, doc.Version)
			location := src
			if src == "-" {
				location = "" // stdin: known by --source, else by the document's title
			}
			res, err := importer.OpenAPI(ctx, st, location, doc, opts, dryRun)
			if err == nil && !dryRun {
				err = importer.KeepURL(ctx, st, creds.Keyring(), res.SourceID, fetched)
			}
			if err != nil {
				return err
			}
			// The redirect URI to register, as oauth provider add says it.
			redirect, cerr := connections.New(nil, nil, nil, cfg.browserURL).CallbackURL()
			if cerr != nil {
				redirect = "<BLINDEXEC_BROWSER_URL>" + connections.CallbackPath
			}
			printSync(cmd.OutOrStdout(), res, doc.Warnings, dryRun, redirect)
			if !dryRun && len(res.Added)+len(res.Changed)+len(res.Removed)+len(res.Renamed) > 0 {
				// As the API's imports are: a sync that changed the catalog.
				source := cmp.Or(location, "(stdin)")
				if opts.SourceURL != "" {
					source = api.SafeURL(location)
				}
				recordChange(ctx, cmd, st, "plugin", api.Detail(api.OpImportOpenAPI, "source", source, "prefix", opts.Prefix))
			}
			imported := len(res.Added) + len(res.Changed) + len(res.Unchanged)
			switch {
			case res.UpToDate:
				return nil
			case imported == 0 && len(res.Failed) > 0:
				return exitError{code: exitFailure, msg: fmt.Sprintf("no operation imported: %d failed", len(res.Failed))}
			case len(res.Failed) > 0:
				return exitError{code: exitPartial, msg: fmt.Sprintf("partial import: %d operation(s) failed", len(res.Failed))}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Prefix, "prefix", "", "put before every plugin name and credential key")
	f.StringVar(&opts.BaseURL, "base-url", "", "server URL (required when the document has no usable server)")
	f.StringArrayVar(&opts.Tags, "tag", nil, "import operations with this tag (repeatable)")
	f.StringArrayVar(&opts.Methods, "method", nil, "import operations of this method (repeatable)")
	f.StringArrayVar(&opts.Paths, "path", nil, "import operations whose path matches this glob (repeatable)")
	f.StringArrayVar(&opts.OperationIDs, "operation-id", nil, "import this operation (repeatable)")
	f.BoolVar(&dryRun, "dry-run", false, "print what would change and write nothing")
	f.BoolVar(&opts.Strict, "strict", false, "show the LLM OpenAI strict-mode schemas (function.strict)")
	f.StringVar(&opts.Source, "source", "", "name the import source (default: SOURCE, or for stdin the document's title)")
	f.BoolVar(&opts.Force, "force", false, "re-import even when the document and options are unchanged")
	f.BoolVar(&opts.Rename, "rename", false, "give already imported plugins the names the importer now derives")
	return cmd
}

func printSync(w io.Writer, res *importer.SyncResult, docWarnings []string, dryRun bool, redirect string) {
	if res.UpToDate {
		fmt.Fprintln(w, "up to date: neither the document nor the options changed since the last import (--force re-imports)")
		return
	}
	verb := ""
	if dryRun {
		verb = " (dry run: nothing written)"
	}
	fmt.Fprintf(w, "added %d, changed %d, removed %d, unchanged %d, failed %d%s\n",
		len(res.Added), len(res.Changed), len(res.Removed), len(res.Unchanged), len(res.Failed), verb)
	printMarked(w, marked{"+", res.Added}, marked{"~", res.Changed}, marked{"-", res.Removed})
	for _, r := range res.Renamed {
		fmt.Fprintf(w, "  > %s -> %s\n", r.From, r.To)
	}
	for _, f := range res.Failed {
		fmt.Fprintf(w, "  ! %s: %s\n", f.Key, f.Reason)
	}
	for _, p := range res.Providers {
		status := p.Status
		if dryRun && status == importer.ProviderCreated {
			status = "would be created" // a dry run writes no provider either
		}
		fmt.Fprintf(w, "  oauth provider %s: %s (%s, token %s), used by %d plugin(s)\n", p.Name, status, p.AuthorizationURL, p.TokenURL, len(p.Plugins))
		if !p.Enabled {
			fmt.Fprintf(w, "    disabled: register the engine as a client there (redirect URI %s), then set its client_id and client_secret and enable it\n", redirect)
		}
	}
	for _, warn := range append(docWarnings, res.Warnings()...) {
		fmt.Fprintf(w, "  warning: %s\n", warn)
	}
}

// progressWriter is stderr when it is a terminal, else nowhere: progress
// lines would only clutter logs and pipes.
func progressWriter(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return f
		}
	}
	return io.Discard
}

// marked is a list of names printed behind one mark.
type marked struct {
	mark  string
	names []string
}

// printMarked prints one line per name: added (+), changed (~), removed (-).
func printMarked(w io.Writer, groups ...marked) {
	for _, g := range groups {
		for _, n := range g.names {
			fmt.Fprintf(w, "  %s %s\n", g.mark, n)
		}
	}
}

// importAliasesCmd sets the other names tool search knows an import
// source by (issue 49): a request naming one finds the source's tools
// first. A sync never changes them.
func importAliasesCmd(cfg *config) *cobra.Command {
	return &cobra.Command{
		Use:   "aliases SOURCE_ID [NAME...]",
		Short: "Set the names tool search knows an import source by, besides its own (none: clear them); kept across syncs",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id < 1 {
				return usageError{fmt.Errorf("SOURCE_ID: %q is not a source id (GET /v1/sources lists them)", args[0])}
			}
			var names []string
			for _, n := range args[1:] {
				if n = strings.TrimSpace(n); n != "" && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.SetImportSourceAliases(ctx, id, names); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "source %d: aliases %q\n", id, names)
				return nil
			})
		},
	}
}
