//go:build !unix

package main

import (
	"os"
	"syscall"
)

func demoProcAttr() *syscall.SysProcAttr { return nil }

// demoInterrupt stops a child: without Unix signals it cannot drain.
func demoInterrupt(p *os.Process) error { return p.Kill() }
