package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/catalog"
	"github.com/blindexec/blindexec/plugins"
	"github.com/blindexec/blindexec/store"
)

// selectionFlags declares --name, --tag and --source on cmd: a
// catalog.Selection, as POST /v1/plugins/perms and agents take one.
func selectionFlags(cmd *cobra.Command, sel *catalog.Selection) {
	f := cmd.Flags()
	f.StringArrayVar(&sel.Names, "name", nil, "a plugin by name (repeatable)")
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
		Use:   "perms [--name N] [--tag T] [--source ID] (PERM... | --none)",
		Short: "Set the RuoYi permission strings a user needs to use plugins, one of which suffices (kept across syncs)",
		RunE: func(cmd *cobra.Command, args []string) error {
			fields := append(sel.Check("--"), plugins.CheckPerms("PERM", args)...)
			if sel.Empty() {
				fields = append(fields, plugins.FieldError{Field: "--name, --tag or --source", Message: "name the plugins to set"})
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
