package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/egress"
	"github.com/blindexec/blindexec/plugins/openapiquery"
)

// openapiFlags locate the document of the query commands.
type openapiFlags struct {
	baseURL, spec, out string
	cacheTTL           time.Duration
}

// bind declares the flags on cmd; --out only where a result is written
// (not over stdio, where stdout is the protocol).
func (o *openapiFlags) bind(cmd *cobra.Command, cfg *config, out bool) {
	f := cmd.PersistentFlags()
	f.StringVar(&o.baseURL, "base-url", "", "the service whose {base-url}/openapi.json to read")
	f.StringVar(&o.spec, "spec", "", "a document's URL or file path instead")
	if out {
		f.StringVar(&o.out, "out", "", "write the JSON result to this file instead of stdout")
	}
	f.DurationVar(&o.cacheTTL, "cache-ttl", cfg.openapiCacheTTL, "skip fetching a document again within this time of its last fetch (BLINDEXEC_OPENAPI_CACHE_TTL_MS; off by default: every fetch is hashed and an unchanged hash reuses the index)")
}

// location is where the document is; required unless optional.
func (o *openapiFlags) location(optional bool) (string, error) {
	if o.baseURL == "" && o.spec == "" {
		if optional {
			return "", nil
		}
		return "", usagef("give --base-url URL or --spec URL|PATH")
	}
	loc, err := openapiquery.Location(o.baseURL, o.spec)
	if err != nil {
		return "", usageError{err}
	}
	return loc, nil
}

func (o *openapiFlags) cache(cfg *config, loc string) (*openapiquery.Cache, error) {
	client, err := cfg.egressClient(loc)
	if err != nil {
		return nil, err
	}
	return openapiquery.NewCache(client, o.cacheTTL), nil
}

func openapiCmd(cfg *config) *cobra.Command {
	o := &openapiFlags{}
	cmd := &cobra.Command{Use: "openapi", Short: "Find an endpoint in an OpenAPI document: fetch, index, search, schema request|response"}
	o.bind(cmd, cfg, true)
	// run loads the index and prints what query returns, or the error
	// object (exit 1).
	run := func(query func(ctx context.Context, c *openapiquery.Cache, loc string) (any, error)) func(*cobra.Command, []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			loc, err := o.location(false)
			if err != nil {
				return err
			}
			c, err := o.cache(cfg, loc)
			if err != nil {
				return err
			}
			v, err := query(cmd.Context(), c, loc)
			if err != nil {
				v = openapiquery.ErrorObject(err)
			}
			if perr := o.write(cmd.OutOrStdout(), v); perr != nil {
				return perr
			}
			if err != nil {
				return exitError{code: exitFailure, msg: err.Error()}
			}
			return nil
		}
	}
	fetch := &cobra.Command{Use: "fetch", Short: "Fetch the document: title, version, sha256, counts", Args: argsExactly(0, "no arguments"),
		RunE: run(func(ctx context.Context, c *openapiquery.Cache, loc string) (any, error) {
			return openapiquery.Fetch(ctx, c, loc)
		})}
	index := &cobra.Command{Use: "index", Short: "Build the index: every operation and schema name", Args: argsExactly(0, "no arguments"),
		RunE: run(func(ctx context.Context, c *openapiquery.Cache, loc string) (any, error) {
			return openapiquery.Dump(ctx, c, loc)
		})}
	var query, method string
	var limit int
	search := &cobra.Command{Use: "search", Short: "search_operations: by tag, operationId, path, summary and description", Args: argsExactly(0, "no arguments"),
		RunE: run(func(ctx context.Context, c *openapiquery.Cache, loc string) (any, error) {
			idx, _, err := c.Get(ctx, loc)
			if err != nil {
				return nil, err
			}
			return idx.SearchOperations(openapiquery.Query{Text: query, Match: openapiquery.AllFields, Method: method}, limit)
		})}
	search.Flags().StringVar(&query, "query", "", "words to find (empty lists everything)")
	search.Flags().StringVar(&method, "method", "", "only this HTTP method")
	search.Flags().IntVar(&limit, "limit", openapiquery.DefaultLimit, "at most this many operations")
	var opID string
	schema := &cobra.Command{Use: "schema", Short: "An operation's request or response schema"}
	schema.PersistentFlags().StringVar(&opID, "operation-id", "", "the operation (its operationId, or \"METHOD /path\")")
	schemaOf := func(use, short string, get func(*openapiquery.Index, string) (any, error)) *cobra.Command {
		return &cobra.Command{Use: use, Short: short, Args: argsExactly(0, "no arguments"),
			RunE: func(cmd *cobra.Command, args []string) error {
				if opID == "" {
					return usagef("schema %s: --operation-id is required", use)
				}
				return run(func(ctx context.Context, c *openapiquery.Cache, loc string) (any, error) {
					idx, _, err := c.Get(ctx, loc)
					if err != nil {
						return nil, err
					}
					return get(idx, opID)
				})(cmd, args)
			}}
	}
	schema.AddCommand(
		schemaOf("request", "get_request_schema: path, query, header, cookie and body", func(x *openapiquery.Index, id string) (any, error) { return x.RequestSchema(id) }),
		schemaOf("response", "get_response_schema: every status code", func(x *openapiquery.Index, id string) (any, error) { return x.ResponseSchema(id) }),
	)
	cmd.AddCommand(fetch, index, search, schema)
	return cmd
}

func (o *openapiFlags) write(stdout io.Writer, v any) error {
	if o.out == "" {
		return printJSON(stdout, v)
	}
	f, err := os.Create(o.out)
	if err != nil {
		return err
	}
	if err := printJSON(f, v); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// mcpOpenAPICmd serves the OpenAPI query tools over stdio.
func mcpOpenAPICmd(cfg *config) *cobra.Command {
	o := &openapiFlags{}
	var stdio bool
	cmd := &cobra.Command{
		Use:   "openapi --stdio [--base-url URL | --spec URL|PATH]",
		Short: "Serve the OpenAPI query tools (search operations, request and response schemas, call plans) as an MCP server over stdio",
		Args:  argsExactly(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stdio {
				return usagef("mcp openapi: only --stdio is offered here; `blindexec serve` serves /mcp/openapi over HTTP")
			}
			loc, err := o.location(true)
			if err != nil {
				return err
			}
			client, err := cfg.egressClient(loc)
			if err != nil {
				return err
			}
			return openapiquery.ServeStdio(cmd.Context(), openapiquery.ServerOptions{
				DefaultSource: loc, Client: client, CacheTTL: o.cacheTTL, AllowFiles: true, Logger: cfg.logger(),
				MaxQueryChars: cfg.toolSearch.MaxQueryChars})
		},
	}
	o.bind(cmd, cfg, false)
	cmd.Flags().BoolVar(&stdio, "stdio", false, "speak MCP on stdin and stdout")
	return cmd
}

// egressClient is the egress-guarded client of the configured policy. A
// trusted URL, one the operator gave on the command line or in the
// settings (an OpenAPI document's location), is trusted as the LLM
// endpoint is: its host is opened for that URL alone, and for redirects
// from it within its origin. Any other URL the client is asked for (a
// spec_path a /mcp/openapi caller names) is held to the policy, so that
// trusting a document opens no other port or path of its host to a
// caller. A file path or "" trusts nothing.
func (c *config) egressClient(trusted ...string) (*http.Client, error) {
	policy, err := egress.ParsePolicy(c.egressAllow)
	if err != nil {
		return nil, err
	}
	if c.egressClosed != "" {
		policy = egress.Closed(c.egressClosed)
	}
	client := egress.NewClient(&egress.Dialer{Policy: policy, Dial: c.dial, Plaintext: c.plaintext})
	t := trustedURLs{urls: map[string]string{}, guarded: client.Transport}
	allow := c.egressAllow
	for _, raw := range trusted {
		if u, err := url.Parse(raw); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != "" {
			allow += "," + u.Hostname()
			if o := egress.OriginOf(u); o != "" { // a name the client dials
				t.urls[u.String()] = o
			}
		}
	}
	if len(t.urls) == 0 {
		return client, nil
	}
	if policy, err = egress.ParsePolicy(allow); err != nil {
		return nil, err
	}
	t.trusted = egress.NewTransport(&egress.Dialer{Policy: policy, Dial: c.dial, Plaintext: c.plaintext})
	client.Transport = t
	return client, nil
}

// trustedURLs sends a request through trusted when its redirect chain
// began at a trusted URL and stayed on that URL's origin, and any other
// through guarded.
type trustedURLs struct {
	urls             map[string]string // URL → its origin
	trusted, guarded http.RoundTripper
}

func (t trustedURLs) RoundTrip(req *http.Request) (*http.Response, error) {
	first := req
	for first.Response != nil && first.Response.Request != nil {
		first = first.Response.Request
	}
	origin, ok := t.urls[first.URL.String()]
	for r := req; ok && r != nil; {
		ok = egress.OriginOf(r.URL) == origin
		if r.Response == nil {
			break
		}
		r = r.Response.Request
	}
	if ok {
		return t.trusted.RoundTrip(req)
	}
	return t.guarded.RoundTrip(req)
}

// openapiTools is the handler of /mcp/openapi under serve: files only as
// the configured default document, never from a call (a client could
// otherwise probe the server's files). The configured document's URL is
// trusted, a caller's under the default egress policy; this client serves
// nothing else, so plugins' calls gain nothing.
func (c *config) openapiTools(log *slog.Logger) (http.Handler, error) {
	o := &openapiFlags{baseURL: c.openapiBaseURL, spec: c.openapiSpec, cacheTTL: c.openapiCacheTTL}
	loc, err := o.location(true)
	if err != nil {
		return nil, fmt.Errorf("BLINDEXEC_OPENAPI_BASE_URL / BLINDEXEC_OPENAPI_SPEC: %w", err)
	}
	// A caller's spec_path is no URL the operator vouched for: under the
	// default deny, BLINDEXEC_EGRESS_ALLOW being the catalog's opening.
	callers := *c
	callers.egressAllow = ""
	callers.egressClosed = "a caller's spec_path stays under the default deny, whatever " + egress.EnvAllow +
		" opens to the catalog's plugins; the server's own document (BLINDEXEC_OPENAPI_BASE_URL, BLINDEXEC_OPENAPI_SPEC) is trusted"
	client, err := callers.egressClient(loc)
	if err != nil {
		return nil, err
	}
	return openapiquery.Handler(openapiquery.ServerOptions{DefaultSource: loc, Client: client, CacheTTL: o.cacheTTL, Logger: log,
		MaxQueryChars: c.toolSearch.MaxQueryChars}), nil
}
