//go:build unix && !linux

package main

import "syscall"

// childProcAttr puts the command in a process group of its own, so
// signals reach it only through natscoord, once.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
