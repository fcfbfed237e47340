package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// app carries the global flags and output streams of one invocation.
type app struct {
	conn   connFlags
	json   bool
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// run executes one command line with the process's stdin and returns the
// process exit code. Errors are printed as one line on stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runIO(ctx, args, os.Stdin, stdout, stderr)
}

// runIO is run with a given stdin (read by `--task -`).
func runIO(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
	root := a.rootCommand()
	root.SetArgs(args) // rootCommand set the streams from a
	err := checkArgs(root, args)
	if err == nil {
		err = root.ExecuteContext(ctx)
	}
	if err != nil {
		var silent exitCode
		if errors.As(err, &silent) {
			return int(silent)
		}
		fmt.Fprintln(stderr, "natscoord: "+a.conn.redact(oneLine(err)))
		var ee exitError
		if errors.As(err, &ee) {
			return ee.code
		}
		return 1
	}
	return 0
}

// exitError lets a command choose its exit code.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string { return e.err.Error() }
func (e exitError) Unwrap() error { return e.err }

// exitCode makes natscoord exit with that code and print nothing: a
// command it ran has already said what it had to say.
type exitCode int

func (c exitCode) Error() string { return fmt.Sprintf("exit code %d", int(c)) }

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "natscoord",
		Short:         "Coordination primitives on NATS JetStream: leases, locks, elections, task ledgers",
		Version:       buildVersion().Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	a.conn.register(root)
	root.PersistentFlags().BoolVar(&a.json, "json", false, "print JSON for scripts instead of tables")
	root.AddCommand(a.serveCommand())
	for _, add := range extraCommands {
		root.AddCommand(add(a))
	}
	// The completion command binds its output when it is made, so the
	// streams are set first; made now, refuseUnknownSubcommands covers it.
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	if a.stdin != nil {
		root.SetIn(a.stdin)
	}
	root.InitDefaultCompletionCmd()
	refuseUnknownSubcommands(root)
	return root
}

// extraCommands are registered by the files that implement them, so each
// command group lives in its own file.
var extraCommands []func(*app) *cobra.Command
