package main

import (
	"os"
	"syscall"
)

// demoProcAttr gives the demo's children a process group of their own (a
// terminal's Ctrl-C reaches them through the demo, which stops them) and
// the parent-death signal SIGKILL: a child outlives no demo, however it
// ends, and with the demo its embedded server is gone, so there is
// nothing left to drain. (`natscoord work`'s supervisor then stops the
// command it was running.) The kernel sends it when the thread that
// started the child exits, so the starter holds its OS thread.
func demoProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// demoInterrupt asks a child to drain and exit.
func demoInterrupt(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
