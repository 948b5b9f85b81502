package engine

import (
	"log/slog"
	"time"
)

// Process is how an adapter starts and stops its CLI's processes: the part
// of every adapter's Config that is the same for all of them. An adapter's
// Config embeds it and adds only its own settings.
type Process struct {
	// Bin is the executable of the pinned install.
	Bin string
	// StateDir holds each instance's state (HOME and the CLI's own dirs):
	// StateDir/<tenant>/<account>; each adapter says what it puts there.
	StateDir string
	// Wrap prefixes the command line, e.g. a namespace launcher in tests
	// ("ip", "netns", "exec", NS, "unshare", "-p", "-f", "--mount-proc", "--").
	Wrap []string
	// Sandbox confines every process; nil runs them unconfined.
	Sandbox *Sandboxing
	// IdleTimeout retires a warm process unused this long: 0 means
	// DefaultIdleTimeout; a negative value turns warm processes off.
	IdleTimeout time.Duration
	// KillGrace is the time between SIGTERM and SIGKILL of a stopped
	// process group; 0 means DefaultKillGrace.
	KillGrace time.Duration
	// InterruptGrace is how long an interrupted turn waits for the CLI to
	// end it before the process is stopped; 0 means DefaultInterruptGrace.
	InterruptGrace time.Duration
	// CancelGrace is how long a cancelled turn's CLI gets, after the
	// interrupt, to end the turn (saving its session) before its process
	// group is stopped; 0 means DefaultCancelGrace.
	CancelGrace time.Duration
	// Logger gets the adapter's diagnostics; nil discards them.
	Logger *slog.Logger
	// Tap, when set, sees every line written to (sent) or read from a
	// process, for recording transcripts. It must not block.
	Tap func(sent bool, line []byte)
}

// Defaults fills the unset (0) waits: the idle timeout of warm processes
// (a negative one turns them off), and the grace periods of a stop, an
// interrupt and a cancel.
func (p *Process) Defaults() {
	if p.IdleTimeout == 0 {
		p.IdleTimeout = DefaultIdleTimeout
	}
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&p.KillGrace, DefaultKillGrace}, {&p.InterruptGrace, DefaultInterruptGrace}, {&p.CancelGrace, DefaultCancelGrace}} {
		if *d.v <= 0 {
			*d.v = d.def
		}
	}
}

// Argv is the command line of a process: Wrap, Bin, then args, in a slice
// of its own.
func (p *Process) Argv(args ...string) []string {
	return append(append(append(make([]string, 0, len(p.Wrap)+1+len(args)), p.Wrap...), p.Bin), args...)
}
