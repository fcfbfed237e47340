package main

import "syscall"

// childProcAttr puts the command in a process group of its own (signals
// reach it only through natscoord, once) and has the kernel send it
// SIGTERM if natscoord dies, so it does not run on unprotected after the
// lock's lease expires.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
