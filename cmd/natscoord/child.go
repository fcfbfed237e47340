//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"
)

// Running a command under a lock or a leadership (`lock KEY -- CMD`,
// `elect NAME VALUE -- CMD`) follows etcdctl and the shell:
//
//   - the command gets natscoord's stdin, stdout, stderr and environment,
//     less its secrets (NATS_* and NATSCOORD_*: commandEnv, as for work;
//     --pass-secrets keeps them), plus variables naming the lock or
//     election and its fencing token;
//   - the signals a supervisor sends (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
//     SIGUSR1, SIGUSR2) are forwarded to it, and natscoord keeps the lock
//     until the command has exited, whatever it was sent;
//   - natscoord exits with the command's exit code, or 128+N when the
//     command was killed by signal N; 127 when it cannot be found, 126
//     when it cannot be started;
//   - when the lock or the leadership is lost (a renewal found it taken
//     over, or its validity window ran out), the command is sent SIGTERM
//     at once, before the server can hand the lock to anyone else, and
//     natscoord exits non-zero (the command's code, or 1 if that was 0);
//   - the command runs in a process group of its own, so a terminal's
//     Ctrl-C reaches it once (forwarded), and on Linux it is sent SIGTERM
//     if natscoord itself dies (it would otherwise run on unprotected once
//     the lease expires).

// forwardedSignals are the signals passed on to the command.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// lostError reports a lock or leadership lost while the command ran.
type lostError struct {
	what  string // `lock "k"`, `leadership of "e"`
	cause error
	code  int
}

func (e lostError) Error() string {
	return fmt.Sprintf("%s lost while the command ran (%v); the command was sent SIGTERM", e.what, e.cause)
}
func (e lostError) Unwrap() error { return e.cause }

// commandAfterDash splits `KEY ... -- CMD ARGS` into the positional words
// before "--" and the command after it. want is the number of words
// before the command; a command without "--" is refused, because its
// flags would have been parsed as natscoord's.
func commandAfterDash(cmd *cobra.Command, args []string, want int) (words, argv []string, err error) {
	dash := cmd.ArgsLenAtDash()
	switch {
	case dash < 0 && len(args) == want:
		return args, nil, nil
	case dash < 0 && len(args) > want:
		return nil, nil, fmt.Errorf("%s: put -- before the command to run (%s ... -- %s)", cmd.CommandPath(), cmd.CommandPath(), args[want])
	case dash != want:
		return nil, nil, fmt.Errorf("%s: want %d argument(s) before --, got %d", cmd.CommandPath(), want, dash)
	case len(args) == want:
		return nil, nil, fmt.Errorf("%s: no command after --", cmd.CommandPath())
	}
	return args[:want], args[want:], nil
}

// runUnder runs argv with the environment env while held is not done and
// returns the exit status natscoord should end with (nil for 0). See the
// rules above.
func runUnder(held context.Context, what string, argv, env []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = env
	c.Stdin, c.Stdout, c.Stderr = stdin, stdout, stderr
	c.SysProcAttr = childProcAttr()
	// The parent-death signal follows the thread that started c.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	sigc := make(chan os.Signal, 8)
	signal.Notify(sigc, forwardedSignals...)
	defer signal.Stop(sigc)

	if err := c.Start(); err != nil {
		return exitError{code: startErrorCode(err), err: fmt.Errorf("run %s: %w", argv[0], err)}
	}
	waitc := make(chan error, 1)
	go func() { waitc <- c.Wait() }()

	lost := held.Done()
	var lostCause error
	for {
		select {
		case s := <-sigc:
			signalGroup(c.Process, s)
		case <-lost:
			lost = nil
			lostCause = context.Cause(held)
			signalGroup(c.Process, syscall.SIGTERM)
		case err := <-waitc:
			code := statusCode(c.ProcessState, err)
			if lostCause != nil {
				if code == 0 {
					code = 1
				}
				return exitError{code: code, err: lostError{what: what, cause: lostCause, code: code}}
			}
			if code != 0 {
				return exitCode(code)
			}
			return nil
		}
	}
}

// startErrorCode is the shell's exit code for a command that could not
// be started: 127 when it was not found, 126 when it could not be run.
func startErrorCode(err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		return 127
	}
	return 126
}

// statusCode is the shell's view of how the command ended.
func statusCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
