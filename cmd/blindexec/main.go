// Command blindexec runs the blindexec plugin execution engine: the HTTP
// server, and the administration commands over the same database.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
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

// run executes one command line and returns the exit code.
func run(cfg *config, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRoot(cfg, stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
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

func newRoot(cfg *config, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "blindexec",
		Short:         "blindexec: a plugin execution engine (a blind executor for LLM tool calls)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	cfg.bind(root)
	root.AddCommand(
		serveCmd(cfg),
		migrateCmd(cfg),
		pluginCmd(cfg),
		credCmd(cfg),
		tokenCmd(cfg),
		toolsCmd(cfg),
		execCmd(cfg),
		importCmd(cfg),
		mcpCmd(cfg),
		chatCmd(cfg),
		openapiCmd(cfg),
		searchCmd(cfg),
	)
	return root
}
