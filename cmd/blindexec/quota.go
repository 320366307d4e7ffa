package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/quota"
	"github.com/blindexec/blindexec/store"
)

func quotaCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "quota", Short: "Manage quota rules (calls per user and tool, run tokens per day) and see a user's use"}
	var (
		rule quota.Rule
		user int64
	)
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Add a rule: --calls N --window minute|hour|day [--plugin P]... [--tag T]... [--consequential], or --run-tokens-per-day N; --user N for one user (every user, each on their own, without)",
		Args:  argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rule.Name = args[0]
			if cmd.Flags().Changed("user") {
				rule.UserID = &user
			}
			if err := rule.Validate(); err != nil {
				if fe, ok := errors.AsType[*quota.FieldError](err); ok {
					return usagef("quota add: %s: %s", ruleFlag(fe.Field), fe.Message)
				}
				return usagef("quota add: %v", err)
			}
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.CreateQuotaRule(ctx, rule.Row()); err != nil {
					return err
				}
				doc, _ := json.Marshal(rule) // described as the API's POST /v1/quotas/rules is
				recordChange(ctx, cmd, st, "quota_rule", api.DescribeChange("POST", "/v1/quotas/rules", doc, nil, 0, nil))
				fmt.Fprintf(cmd.OutOrStdout(), "added %s\n", rule.Name)
				return nil
			})
		},
	}
	f := add.Flags()
	f.Int64Var(&user, "user", 0, "the user the rule applies to (0: calls naming no user); every user, each on their own, when omitted")
	f.StringSliceVar(&rule.Plugins, "plugin", nil, "a tool the rule applies to (repeatable)")
	f.StringSliceVar(&rule.Tags, "tag", nil, "a tag whose tools the rule applies to (repeatable)")
	f.BoolVar(&rule.Consequential, "consequential", false, "the rule applies to consequential tools (every method but GET, HEAD, OPTIONS; MCP tools)")
	f.Int64Var(&rule.Calls, "calls", 0, "calls allowed in a window")
	f.StringVar(&rule.Window, "window", "", "minute, hour or day, aligned in BLINDEXEC_QUOTA_TZ")
	f.Int64Var(&rule.RunTokensPerDay, "run-tokens-per-day", 0, "model tokens the user's runs may spend a day (a run rule)")
	list := &cobra.Command{
		Use: "list", Short: "List the rules", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withQuota(cmd, cfg, func(ctx context.Context, k *quota.Keeper) error {
				rules, err := k.Rules(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tUSER\tAPPLIES TO\tLIMIT")
				for _, r := range rules {
					who := "each user"
					if r.UserID != nil {
						who = fmt.Sprint(*r.UserID)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Name, who, r.AppliesTo(), r.Limit())
				}
				return tw.Flush()
			})
		},
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Delete a rule (its use goes with it)", Args: argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
				if err := st.DeleteQuotaRule(ctx, args[0]); err != nil {
					return err
				}
				recordChange(ctx, cmd, st, "quota_rule", api.Detail(api.OpQuotaRuleDeleted, "name", args[0]))
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s\n", args[0])
				return nil
			})
		},
	}
	var useUser int64
	use := &cobra.Command{
		Use: "use", Short: "Show --user's use of each rule that applies, and when it resets", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withQuota(cmd, cfg, func(ctx context.Context, k *quota.Keeper) error {
				uses, err := k.UseOf(ctx, useUser)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "RULE\tAPPLIES TO\tUSED\tLIMIT\tRESETS AT")
				for _, u := range uses {
					fmt.Fprintf(tw, "%s\t%s\t%d\t%d %s %s\t%s\n", u.Rule, u.What, u.Used, u.Limit, u.Unit, quota.Per(u.Window), u.ResetsAt.Format(time.RFC3339))
				}
				return tw.Flush()
			})
		},
	}
	use.Flags().Int64Var(&useUser, "user", 0, "the user (0: calls naming no user)")
	cmd.AddCommand(add, list, rm, use)
	return cmd
}

// ruleFlag is the argument or flag that sets a rule's field.
func ruleFlag(field string) string {
	field, _, _ = strings.Cut(field, "[")
	switch field {
	case "name":
		return "NAME"
	case "user_id":
		return "--user"
	case "plugins", "tags":
		return "--" + strings.TrimSuffix(field, "s")
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// withQuota runs fn with a keeper of the stored rules, windows in
// BLINDEXEC_QUOTA_TZ.
func withQuota(cmd *cobra.Command, cfg *config, fn func(context.Context, *quota.Keeper) error) error {
	return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
		w := store.NewWatcher(st, time.Hour, nil)
		if _, err := w.Poll(ctx); err != nil {
			return err
		}
		return fn(ctx, quota.New(st, w, nil, cfg.quotaTZ, nil))
	})
}
