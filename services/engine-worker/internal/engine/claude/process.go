package claude

import (
	"strconv"
	"sync/atomic"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
)

// proc is one Claude Code process in bidirectional stream-json mode. Its
// stdout lines pile up in an unbounded queue; one turn at a time writes to
// its stdin.
type proc struct {
	*engine.Child
	lines  *engine.Queue[[]byte]
	nextID atomic.Int64

	spec   string // how it was started, without the session it resumes
	resume string // the engine session it resumes ("" for a fresh one)
}

// startProc starts argv (wrap + the CLI + args) in dir with env. grace is
// how long the group gets between SIGTERM and SIGKILL.
func startProc(argv, env []string, dir string, grace time.Duration, tap func(bool, []byte), confine *engine.Confinement) (*proc, error) {
	p := &proc{lines: engine.NewQueue[[]byte]()}
	c, err := engine.StartChild(engine.ChildSpec{Argv: argv, Env: env, Dir: dir, Grace: grace, Tap: tap,
		Line: p.lines.Push, Closed: p.lines.Close, Confine: confine})
	if err != nil {
		return nil, err
	}
	p.Child = c
	return p, nil
}

// control sends a control request and returns its id.
func (p *proc) control(request map[string]any) (string, error) {
	id := "req_" + strconv.FormatInt(p.nextID.Add(1), 10)
	return id, p.Send(map[string]any{"type": "control_request", "request_id": id, "request": request})
}

// respond answers the CLI's control request id.
func (p *proc) respond(id string, response any) error {
	return p.Send(map[string]any{"type": "control_response",
		"response": map[string]any{"subtype": "success", "request_id": id, "response": response}})
}

// prompt writes a user turn.
func (p *proc) prompt(content []map[string]any) error {
	return p.Send(map[string]any{"type": "user", "parent_tool_use_id": nil, "session_id": "",
		"message": map[string]any{"role": "user", "content": content}})
}
