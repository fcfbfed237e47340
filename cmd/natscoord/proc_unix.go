//go:build unix

package main

import (
	"os"
	"syscall"
)

// signalGroup sends sig to the command's process group (it leads one of
// its own, see childProcAttr), so a shell pipeline started by the command
// gets it too, as it would from a terminal.
func signalGroup(p *os.Process, sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		_ = p.Signal(sig)
		return
	}
	if err := syscall.Kill(-p.Pid, s); err != nil {
		_ = p.Signal(sig)
	}
}
