package privatepg

import "syscall"

func setPdeathsig(a *syscall.SysProcAttr, sig syscall.Signal) { a.Pdeathsig = sig }
