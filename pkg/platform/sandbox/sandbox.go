// Package sandbox confines every untrusted process Clopen starts: the
// agents the engine worker runs and the stdio MCP servers the bridge runs.
//
// An agent runs commands a language model chooses, so each process gets a
// Spec: an unprivileged uid derived from its tenant, a private mount
// namespace that shows only its workspace and engine state (read-write),
// the engine's installed files and a minimal system (read-only), a private
// /tmp, /proc of its own pid namespace, a network namespace with loopback
// only, no capabilities, no_new_privs, a seccomp filter, and resource
// limits. The only way out of the network namespace is a list of
// Endpoints: a loopback port inside that an init process bridges to a unix
// socket on the host (the run's model API).
//
// A Sandbox turns a Spec and a command line into the command the worker
// starts. Bwrap (bubblewrap) is the default; an operator who wants a
// stronger boundary (gVisor's runsc, nsjail) implements Sandbox with the
// same Spec, and Check proves on start-up that it holds on the host.
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"
)

// Sandbox wraps agent processes.
type Sandbox interface {
	// Name says which implementation this is, for logs and errors.
	Name() string
	// Command returns how to start argv confined by spec. The caller starts
	// Argv, passes ExtraFiles to the child (fd 3 on) and calls Close once the
	// process has started (or failed to).
	Command(spec Spec, argv []string) (*Command, error)
	// Check proves the sandbox works on this host: it starts a probe inside
	// it and verifies every property of the Spec it was given. A nil error
	// means agents can run confined.
	Check(ctx context.Context) error
}

// Command is a confined command line ready to start.
type Command struct {
	Argv       []string
	ExtraFiles []*os.File
	closers    []func()
}

// Close releases what Command opened for the start.
func (c *Command) Close() {
	for _, f := range c.ExtraFiles {
		_ = f.Close()
	}
	for _, f := range c.closers {
		f()
	}
}

// Spec is what one agent process may see and use.
type Spec struct {
	// UID and GID the process runs as (see UID). Never 0.
	UID, GID int
	// Workspace is the session's working directory, mounted read-write at
	// the same path.
	Workspace string
	// State are the engine's state and config dirs for this tenant and
	// session (HOME, CLAUDE_CONFIG_DIR...), mounted read-write.
	State []string
	// ReadOnly are the engine's installed files, mounted read-only at the
	// same paths.
	ReadOnly []string
	// Endpoints are the only network destinations: a loopback port inside,
	// bridged to a unix socket outside.
	Endpoints []Endpoint
	// Env are variables ("NAME=value") set inside besides the command's
	// own: how the sandbox tells the agent of its way out (HTTPS_PROXY).
	Env []string
	// CommandEnv are variables ("NAME=value") only the command and its
	// children get. They reach the init in a file only it can read, never
	// bwrap's environment or command line: a variable a tenant chose
	// (LD_PRELOAD) must not act on bwrap, which runs as root on the host,
	// nor on the init, and a secret must not show in the host's process
	// list.
	CommandEnv []string
	// Limits bound the process and everything it starts.
	Limits Limits
}

// Endpoint is one allowed destination: connections to 127.0.0.1:Port
// inside the sandbox reach the unix socket Socket on the host. The socket
// must accept the sandbox's uid; mode 0666 is safe, since only the
// sandboxes it is mounted in can see it.
type Endpoint struct {
	Port   int
	Socket string
}

// Limits are the resource limits of one agent process and its children.
// Zero means the default.
type Limits struct {
	// MemoryBytes caps each process's data: heap and private writable
	// mappings (RLIMIT_DATA). Not the address space: JavaScript engines
	// reserve many gigabytes of it they never use.
	MemoryBytes uint64
	// Procs caps the processes of the sandbox's uid (RLIMIT_NPROC).
	Procs uint64
	// CPUSeconds caps each process's CPU time (RLIMIT_CPU).
	CPUSeconds uint64
	// OpenFiles caps each process's open files (RLIMIT_NOFILE).
	OpenFiles uint64
}

// DefaultLimits are the limits of a Spec that sets none.
var DefaultLimits = Limits{MemoryBytes: 4 << 30, Procs: 512, CPUSeconds: 3600, OpenFiles: 4096}

func (l Limits) withDefaults() Limits {
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultLimits.MemoryBytes
	}
	if l.Procs == 0 {
		l.Procs = DefaultLimits.Procs
	}
	if l.CPUSeconds == 0 {
		l.CPUSeconds = DefaultLimits.CPUSeconds
	}
	if l.OpenFiles == 0 {
		l.OpenFiles = DefaultLimits.OpenFiles
	}
	return l
}

// UIDRange is the range tenant uids are taken from.
type UIDRange struct {
	First int // the lowest uid, e.g. 100000
	Size  int // how many uids, e.g. 1<<20
}

// DefaultUIDRange keeps tenant uids clear of system and login users.
var DefaultUIDRange = UIDRange{First: 100000, Size: 1 << 20}

// UID returns the stable uid (used as gid too) of tenant in r: the same
// tenant always gets the same uid, so its files stay its own between runs,
// and two tenants share one only on a hash collision in r.Size.
func (r UIDRange) UID(tenant string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(tenant))
	return r.First + int(h.Sum32()%uint32(r.Size))
}

func (s Spec) validate() error {
	var errs []error
	if s.UID <= 0 || s.GID <= 0 {
		errs = append(errs, fmt.Errorf("uid %d, gid %d: must be unprivileged", s.UID, s.GID))
	}
	for _, kv := range s.CommandEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" || strings.ContainsRune(kv, 0) {
			errs = append(errs, fmt.Errorf("command env %q: want NAME=value without NUL", kv))
		}
	}
	for _, e := range s.Endpoints {
		if e.Port <= 0 || e.Port > 65535 || e.Socket == "" {
			errs = append(errs, fmt.Errorf("endpoint %d -> %q: bad port or socket", e.Port, e.Socket))
		}
	}
	return errors.Join(errs...)
}
