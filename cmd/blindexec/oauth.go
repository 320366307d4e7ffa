package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/api"
	"github.com/blindexec/blindexec/connections"
	"github.com/blindexec/blindexec/store"
)

func oauthCmd(cfg *config) *cobra.Command {
	cmd := &cobra.Command{Use: "oauth", Short: "Manage OAuth providers and users' connections to them"}
	provider := &cobra.Command{Use: "provider", Short: "Register, list and remove OAuth providers users connect their accounts at"}
	var (
		p           connections.Provider
		noPKCE      bool
		disabled    bool
		extra       []string
		secretStdin bool
	)
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Register (or replace) a provider: --authorization-url, --token-url, --client-id, [--revocation-url] [--issuer [--iss-supported]] [--scope S]... [--extra K=V]... [--no-pkce] [--disabled]; --client-secret-stdin reads the client secret from stdin (it is stored encrypted and never shown again)",
		Args:  argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p.Name, p.PKCE, p.Enabled = args[0], !noPKCE, !disabled
			if len(extra) > 0 {
				p.ExtraParams = map[string]string{}
				for _, kv := range extra {
					k, v, ok := strings.Cut(kv, "=")
					if !ok {
						return usagef("oauth provider add: --extra %q: expected KEY=VALUE", kv)
					}
					p.ExtraParams[k] = v
				}
			}
			if secretStdin {
				s, err := readSecret(cmd.InOrStdin())
				if err != nil {
					return err
				}
				p.ClientSecret = s
			}
			if err := p.Validate(); err != nil {
				if inv, ok := errors.AsType[*connections.InvalidProviderError](err); ok {
					return usagef("oauth provider add: %s: %s", providerFlag(inv.Errors[0].Field), inv.Errors[0].Message)
				}
				return usagef("oauth provider add: %v", err)
			}
			return withConnections(cmd, cfg, func(ctx context.Context, svc *connections.Service) error {
				if _, err := svc.PutProvider(ctx, p); err != nil {
					return err
				}
				recordChange(ctx, cmd, svc.Store, "provider", api.Detail(api.OpProviderSaved, "name", p.Name, "client_id", p.ClientID,
					"scopes", strings.Join(p.Scopes, " "), "enabled", strconv.FormatBool(p.Enabled)))
				fmt.Fprintf(cmd.OutOrStdout(), "registered %s\n", p.Name)
				if cb, err := svc.CallbackURL(); err == nil {
					fmt.Fprintf(cmd.OutOrStdout(), "register this redirect URI at the provider: %s\n", cb)
				} else {
					fmt.Fprintln(cmd.OutOrStdout(), "set BLINDEXEC_BROWSER_URL: users cannot connect until it is set (the redirect URI is <BLINDEXEC_BROWSER_URL>/oauth/callback)")
				}
				return nil
			})
		},
	}
	f := add.Flags()
	f.StringVar(&p.AuthorizationURL, "authorization-url", "", "the provider's authorization endpoint")
	f.StringVar(&p.TokenURL, "token-url", "", "the provider's token endpoint")
	f.StringVar(&p.RevocationURL, "revocation-url", "", "the provider's revocation endpoint (RFC 7009): disconnecting revokes there")
	f.StringVar(&p.Issuer, "issuer", "", "the provider's issuer: an iss in its answers must be it (RFC 9207)")
	f.BoolVar(&p.IssSupported, "iss-supported", false, "the provider's metadata says authorization_response_iss_parameter_supported: an answer without iss is refused (RFC 9207; needs --issuer)")
	f.StringSliceVar(&p.Scopes, "scope", nil, "a scope every connection asks for (repeatable)")
	f.StringVar(&p.ClientID, "client-id", "", "the client id registered at the provider")
	f.BoolVar(&secretStdin, "client-secret-stdin", false, "read the client secret from stdin (a public client has none)")
	f.StringSliceVar(&extra, "extra", nil, "an extra parameter of the authorization request, KEY=VALUE (repeatable)")
	f.BoolVar(&noPKCE, "no-pkce", false, "send no PKCE challenge (only for a provider that rejects one)")
	f.BoolVar(&disabled, "disabled", false, "register it disabled: users cannot connect yet")
	list := &cobra.Command{
		Use: "list", Short: "List the providers (never a client secret)", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConnections(cmd, cfg, func(ctx context.Context, svc *connections.Service) error {
				ps, err := svc.Providers(ctx)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tENABLED\tCLIENT ID\tSECRET\tPKCE\tSCOPES\tAUTHORIZATION URL")
				for _, p := range ps {
					fmt.Fprintf(tw, "%s\t%t\t%s\t%s\t%t\t%s\t%s\n", p.Name, p.Enabled, p.ClientID, stored(p.ClientSecretSet), p.PKCE, strings.Join(p.Scopes, " "), p.AuthorizationURL)
				}
				return tw.Flush()
			})
		},
	}
	rm := &cobra.Command{
		Use: "rm NAME", Short: "Remove a provider and every connection to it, revoking their tokens at the provider", Args: argsExactly(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withConnections(cmd, cfg, func(ctx context.Context, svc *connections.Service) error {
				if err := svc.DeleteProvider(ctx, args[0]); err != nil {
					return err
				}
				recordChange(ctx, cmd, svc.Store, "provider", api.Detail(api.OpProviderDeleted, "name", args[0]))
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", args[0])
				return nil
			})
		},
	}
	provider.AddCommand(add, list, rm)

	var user int64
	conns := &cobra.Command{
		Use: "connections", Short: "List users' connections (--user for one user): provider, scopes, expiry, state; never a token", Args: argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withConnections(cmd, cfg, func(ctx context.Context, svc *connections.Service) error {
				cs, err := svc.List(ctx, user)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "USER\tPROVIDER\tACCOUNT\tSTATE\tSCOPES\tEXPIRES")
				for _, c := range cs {
					exp := "-"
					if c.Expires != nil {
						exp = c.Expires.Format(time.RFC3339)
					}
					state := c.State
					if c.Reason != "" {
						state += " (" + c.Reason + ")"
					}
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\n", c.UserID, c.Provider, c.Account, state, strings.Join(c.Scopes, " "), exp)
				}
				return tw.Flush()
			})
		},
	}
	conns.Flags().Int64Var(&user, "user", 0, "one user's connections (every user's without)")
	var discUser int64
	disconnect := &cobra.Command{
		Use: "disconnect PROVIDER --user ID", Short: "Disconnect a user from a provider, revoking the tokens there when it has a revocation URL", Args: argsExactly(1, "PROVIDER"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if discUser <= 0 {
				return usagef("oauth disconnect: --user: required (a positive user id)")
			}
			return withConnections(cmd, cfg, func(ctx context.Context, svc *connections.Service) error {
				if err := svc.Disconnect(ctx, discUser, args[0]); err != nil {
					return err
				}
				recordChange(ctx, cmd, svc.Store, "connection", api.Detail(api.OpConnectionDeleted, "provider", args[0], "user", strconv.FormatInt(discUser, 10)))
				fmt.Fprintf(cmd.OutOrStdout(), "disconnected user %d from %s\n", discUser, args[0])
				return nil
			})
		},
	}
	disconnect.Flags().Int64Var(&discUser, "user", 0, "the user")
	cmd.AddCommand(provider, conns, disconnect)
	return cmd
}

func stored(set bool) string {
	if set {
		return "stored"
	}
	return "-"
}

// providerFlag names the flag of a provider field.
func providerFlag(field string) string {
	switch {
	case field == "name":
		return "NAME"
	case field == "scopes" || strings.HasPrefix(field, "scopes["):
		return "--scope"
	case strings.HasPrefix(field, "extra_params"):
		return "--extra"
	case field == "client_secret":
		return "--client-secret-stdin"
	case field == "authorization_response_iss_parameter_supported":
		return "--iss-supported"
	}
	return "--" + strings.ReplaceAll(field, "_", "-")
}

// withConnections runs fn with the connections service over the
// configured database; disconnecting revokes through the egress-guarded
// client.
func withConnections(cmd *cobra.Command, cfg *config, fn func(context.Context, *connections.Service) error) error {
	return withStore(cmd, cfg, func(ctx context.Context, st *store.Store) error {
		client, err := cfg.egressClient()
		if err != nil {
			return err
		}
		svc, err := cfg.connections(st, client)
		if err != nil {
			return err
		}
		return fn(ctx, svc)
	})
}
