//go:build !linux

package privatepg

import "syscall"

// setPdeathsig is a no-op where the kernel has no parent-death signal: a
// clopen killed there without Stop leaves its postgres running.
func setPdeathsig(*syscall.SysProcAttr, syscall.Signal) {}
