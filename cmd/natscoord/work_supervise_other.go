//go:build !linux

package main

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// Without Linux's subreaper and parent-death signal there is no
// supervisor (see work_supervise_linux.go): the command is started
// directly, in a process group of its own, and what it leaves in that
// group is killed when it ends. A worker killed by SIGKILL leaves it
// running.

// stopMargin: no supervisor to wait for.
const stopMargin = 0

// killNowSignal kills the command's group at once (a lost claim).
const killNowSignal = syscall.SIGKILL

// maybeSupervise: there is no supervisor to be.
func maybeSupervise() {}

// supervision is nothing but the group to clean up.
type supervision struct{}

func commandFor(argv []string, _, _ time.Duration) (*exec.Cmd, *supervision, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = childProcAttr()
	return cmd, &supervision{}, nil
}

// startError: the command itself failed to start (not found, not
// executable).
func (*supervision) startError(argv0 string, err error) error {
	return &commandStartError{code: startErrorCode(err), msg: fmt.Sprintf("%q: %v", argv0, err)}
}

func (*supervision) abort()   {}
func (*supervision) started() {}

// ended kills what is left of the command's process group; the command's
// own wait status says how it ended.
func (*supervision) ended(pid int) (childStatus, bool) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return childStatus{}, false
}
