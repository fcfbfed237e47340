package main

import "syscall"

// childProcAttr puts the command in a process group of its own (signals
// reach it only through natscoord, once) and has the kernel send it
// SIGTERM if natscoord dies, so it does not run on unprotected after the
// lock's lease expires. The kernel sends it when the thread that started
// the child exits (go.dev/issue/27505), so the caller holds its OS thread
// (runtime.LockOSThread) from Start until Wait returns.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
