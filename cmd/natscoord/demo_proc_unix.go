//go:build unix && !linux

package main

import (
	"os"
	"syscall"
)

// demoProcAttr gives the demo's children a process group of their own: a
// terminal's Ctrl-C reaches them through the demo, which stops them.
// Outside Linux, a child of a demo that was killed lives on until it next
// writes a line (its output is a pipe to the demo: SIGPIPE), which it does
// at once when it loses the demo's embedded server.
func demoProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// demoInterrupt asks a child to drain and exit.
func demoInterrupt(p *os.Process) error { return p.Signal(syscall.SIGTERM) }
