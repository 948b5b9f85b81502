package acp

import (
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
)

// proc is one agent process: its JSON-RPC connection on stdio, the tail of
// its stderr, and its process group, which every stop signals as a whole
// (agents re-spawn themselves and start helpers). Stop kills it now; Retire
// lets it save its sessions first.
type proc struct {
	*engine.Child
	conn *conn
}

// startProc starts argv in dir with env, in its own process group. bad
// sees each stdout line that is not JSON-RPC.
func startProc(argv, env []string, dir string, grace time.Duration, tap func(bool, []byte), bad func([]byte, error), confine *engine.Confinement) (*proc, error) {
	c := newConn(bad)
	child, err := engine.StartChild(engine.ChildSpec{Argv: argv, Env: env, Dir: dir, Grace: grace, Tap: tap,
		Line: c.dispatch, Closed: c.eof, Confine: confine})
	if err != nil {
		return nil, err
	}
	c.out = child
	return &proc{Child: child, conn: c}, nil
}
