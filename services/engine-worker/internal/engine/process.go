package engine

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// SignalGroup signals the process group of cmd, which the adapters start
// with Setpgid so that an agent's children go with it. A process already
// gone is os.ErrProcessDone; one never started is nil.
func SignalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
