// Command blindexec runs the blindexec plugin execution engine: the HTTP
// server, and the administration commands over the same database.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	_ "time/tzdata" // BLINDEXEC_QUOTA_TZ without the system's zone files (a distroless image)

	"github.com/spf13/cobra"

	"github.com/blindexec/blindexec/internal/settings"
)

// Exit codes of every command: 0 success, 1 failure (for exec: a tool
// error), 2 bad usage.
const (
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks bad usage (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError carries an exit code with its message; an empty message prints
// nothing (the command already said what happened).
type exitError struct {
	code int
	msg  string
}

func (e exitError) Error() string { return e.msg }

func main() {
	os.Exit(run(&config{}, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code. The settings
// are read first, from the environment and the env file: a bad one stops
// every command (exit 2), naming the variable and what it accepts.
func run(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	src, err := settings.Load(os.LookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "blindexec: "+oneLine(err.Error()))
		return exitUsage
	}
	root := newRoot(cfg, src, stdin, stdout, stderr)
	root.SetArgs(args)
	err = root.Execute()
	if err == nil {
		return 0
	}
	var ee exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "blindexec: "+oneLine(ee.msg))
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "blindexec: "+oneLine(err.Error()))
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		return exitUsage
	}
	return exitFailure
}

// isCobraUsage recognises cobra's own usage errors (unknown command or
// flag), which it does not type.
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command") || strings.HasPrefix(s, "unknown flag") ||
		strings.HasPrefix(s, "unknown shorthand flag") || strings.Contains(s, "flag needs an argument") ||
		strings.HasPrefix(s, "invalid argument")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// args returns a cobra.PositionalArgs that reports bad usage as such.
func argsExactly(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s: expected %s, got %d argument(s)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

func newRoot(cfg *config, src *settings.Source, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "blindexec",
		Short: "blindexec executes LLM tool calls blind: the model sees a tool's name, description and parameters, never its URL or credentials",
		Long: `blindexec executes LLM tool calls blind. Plugins (tool definitions) live in its
database; the model sees only their names, descriptions and parameters, and the
engine makes the real HTTP or MCP call with credentials from the request or from
its encrypted store.

Start with ` + "`blindexec init`" + ` (a master key in ` + settings.DefaultEnvFile + `), then
` + "`blindexec serve`" + ` (it migrates the database first).`,
		Version:       versionLine(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("blindexec {{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cfg.bind(root, src)
	// A bad setting stops every command but --help and --version.
	root.PersistentPreRunE = func(*cobra.Command, []string) error { return settingsError(src.Errs()) }
	root.AddCommand(
		initCmd(cfg),
		serveCmd(cfg),
		migrateCmd(cfg),
		pluginCmd(cfg),
		agentCmd(cfg),
		credCmd(cfg),
		tokenCmd(cfg),
		quotaCmd(cfg),
		oauthCmd(cfg),
		toolsCmd(cfg),
		execCmd(cfg),
		importCmd(cfg),
		mcpCmd(cfg),
		chatCmd(cfg),
		openapiCmd(cfg),
		searchCmd(cfg),
	)
	// Added now rather than by Execute, so that they are covered too.
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	requireSubcommands(root)
	return root
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// settingsError is the bad settings as one usage error, or nil.
func settingsError(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return usageError{errors.New(strings.Join(msgs, "; "))}
}

// requireSubcommands makes every command that only groups others refuse
// an unknown subcommand (exit 2, with the nearest names) instead of
// printing its help and exiting 0; without arguments it prints its help.
func requireSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		requireSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.SuggestionsMinimumDistance = 2
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return cmd.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			msg += "; did you mean " + strings.Join(quoted(s), " or ") + "?"
		} else {
			msg += fmt.Sprintf("; see `%s --help`", cmd.CommandPath())
		}
		return usageError{errors.New(msg)}
	}
}
