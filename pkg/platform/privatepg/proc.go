package privatepg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Escalation delays of terminate: fast shutdown, then immediate, then kill.
const (
	fastGrace      = 10 * time.Second
	immediateGrace = 5 * time.Second
)

// sysProcAttr runs a child in its own process group (a terminal's Ctrl-C
// reaches clopen, which stops the server in order) as cred, and asks the
// kernel to SIGQUIT it (immediate shutdown) should clopen die without
// calling Stop. The kernel sends that signal when the creating OS thread
// exits; Go only retires threads of goroutines that exit while locked to
// them, which this package never does.
func sysProcAttr(cred *syscall.Credential) *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	setPdeathsig(a, syscall.SIGQUIT)
	return a
}

// clearStale deals with what a crashed earlier run left in pgdata: a
// postmaster still serving it is shut down (so is a live clopen's: two
// cannot share a Dir); a postmaster.pid naming a live process known to be
// something else (a reused PID) is removed, since postgres could refuse to
// start over it; a dead PID is left for postgres to recover from. Orphaned
// server processes of a killed postmaster are killed.
func clearStale(ctx context.Context, pgdata string, log *slog.Logger) error {
	pidFile := filepath.Join(pgdata, "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read %s: %w", pidFile, err)
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	pid, _ := strconv.Atoi(string(bytes.TrimSpace(line)))
	if pid <= 0 || !alive(pid) {
		return killStrays(pgdata, log)
	}
	switch comm, cwd := inspect(pid); {
	case comm == "postgres" && cwd != "" && cwd == realPath(pgdata):
		log.Warn("stopping the postgres already serving this data dir", "pid", pid, "pgdata", pgdata)
		if err := terminate(ctx, pid, pollGone(pid), log); err != nil {
			return err
		}
	case comm != "postgres" || cwd != "": // cwd "" when unreadable: let postgres judge
		log.Warn("removing stale postmaster.pid naming an unrelated process", "pid", pid, "pgdata", pgdata)
		if err := os.Remove(pidFile); err != nil {
			return fmt.Errorf("remove stale %s: %w", pidFile, err)
		}
	}
	return killStrays(pgdata, log)
}

// terminate stops the postmaster pid: SIGINT (fast shutdown), SIGQUIT
// (immediate) after fastGrace or once ctx ends, then SIGKILL of it and its
// process group. gone(ctx, d) reports whether it ended within d. The error
// is nil once the process is gone.
func terminate(ctx context.Context, pid int, gone func(context.Context, time.Duration) bool, log *slog.Logger) error {
	steps := []struct {
		sig  syscall.Signal
		ctx  context.Context
		wait time.Duration
	}{
		{syscall.SIGINT, ctx, fastGrace},
		{syscall.SIGQUIT, ctx, immediateGrace},
		{syscall.SIGKILL, context.Background(), immediateGrace}, // never give up on reaping
	}
	for i, s := range steps {
		if i > 0 {
			log.Warn("postgres still running; escalating", "pid", pid, "signal", s.sig.String())
		}
		if err := syscall.Kill(pid, s.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("signal postgres %d: %w", pid, err)
		}
		if s.sig == syscall.SIGKILL {
			_ = syscall.Kill(-pid, s.sig) // its group, if it leads one
		}
		if gone(s.ctx, s.wait) {
			return nil
		}
	}
	return fmt.Errorf("stop postgres %d: still running after SIGKILL", pid)
}

// pollGone is terminate's gone for a process that is not our child.
func pollGone(pid int) func(context.Context, time.Duration) bool {
	return func(ctx context.Context, d time.Duration) bool {
		deadline := time.Now().Add(d)
		for alive(pid) {
			if time.Now().After(deadline) || ctx.Err() != nil {
				return false
			}
			time.Sleep(20 * time.Millisecond)
		}
		return true
	}
}

// killStrays SIGKILLs server processes still working in pgdata with no
// postmaster: children of a postmaster that was itself killed. They exit on
// their own once they notice, but would block a new postmaster until then.
func killStrays(pgdata string, log *slog.Logger) error {
	for _, pid := range serverProcs(pgdata) {
		log.Warn("killing orphaned postgres process", "pid", pid, "pgdata", pgdata)
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !pollGone(pid)(context.Background(), immediateGrace) {
			return fmt.Errorf("kill leftover postgres %d in %s: still running", pid, pgdata)
		}
	}
	return nil
}

// serverProcs lists the postgres processes whose working directory is
// pgdata: the postmaster chdirs there and its children inherit it.
func serverProcs(pgdata string) []int {
	real := realPath(pgdata)
	if real == "" {
		return nil
	}
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !alive(pid) {
			continue
		}
		if comm, cwd := inspect(pid); comm == "postgres" && cwd == real {
			pids = append(pids, pid)
		}
	}
	return pids
}

// inspect returns pid's command name and working directory, each "" when
// unreadable (the cwd of another user's process, for one).
func inspect(pid int) (comm, cwd string) {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	cwd, _ = os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return string(bytes.TrimSpace(b)), cwd
}

// realPath resolves symlinks as the kernel reports a cwd; "" when it can't.
func realPath(p string) string {
	real, _ := filepath.EvalSymlinks(p)
	return real
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name, which may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}
