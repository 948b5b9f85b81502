package codex

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Thread settings: every command that is not read-only asks (untrusted),
// inside the workspace-write sandbox; a structured generation's sandbox is
// read-only. An app-server the worker confines runs its commands without
// a sandbox of codex's own: codex's is bubblewrap in a user namespace,
// which the worker's sandbox does not let a process create, and the
// worker's sandbox already holds the commands to the workspace, the state
// and the model endpoint. Approvals ask the same either way.
const (
	approvalPolicy  = "untrusted"
	sandboxMode     = "workspace-write"
	generateSandbox = "read-only"
	confinedSandbox = "danger-full-access"
)

// setupTimeout bounds the requests that open a turn.
const setupTimeout = 60 * time.Second

// turn is one Run on one app-server: the converter, the approvals in
// flight, and how the turn is being stopped.
type turn struct {
	c       *conn
	req     engine.Request
	emit    engine.Emit
	log     *slog.Logger
	cfg     *Config
	model   string
	effort  string
	schema  json.RawMessage // the final answer's JSON schema (a generation), or nil
	unknown *sync.Map
	// confined: the worker's sandbox holds the app-server (confinedSandbox).
	confined bool

	conv    Converter
	turnID  string
	dialogs *engine.Dialogs[answer] // the approvals in flight
}

// answer is a decided server request, written back by the turn loop.
type answer struct {
	id     json.RawMessage
	result any
	// after runs in the turn loop once the answer is sent (the tool result
	// of a question codex keeps no item for).
	after func()
}

// run opens the thread, starts the turn and relays its notifications until
// turn/completed. reusable is true when the app-server ended the turn
// itself and may take the chat's next one.
func (t *turn) run(ctx context.Context) (reusable bool, err error) {
	_, servers := threadPolicy(t.req.Permissions, t.req.MCPServers)
	t.conv = Converter{Model: t.model, MCPServers: mcpNames(servers)}
	t.c.Queue.Drain() // what arrived while the process was idle belongs to no turn
	if err := t.open(ctx); err != nil {
		return !t.c.Exited(), err
	}
	t.dialogs = engine.NewDialogs[answer](ctx)
	defer t.dialogs.Stop()
	loop := engine.TurnLoop[Message, answer]{Child: t.c.Child, Queue: t.c.Queue, Answers: t.dialogs.Answers(), Log: t.log,
		Stuck:          "codex: no turn/completed after interrupt; stopped the app-server",
		InterruptGrace: t.cfg.InterruptGrace, CancelGrace: t.cfg.CancelGrace,
		Handle: func(m Message) (bool, error) {
			if err := t.message(t.dialogs.Context(), m); err != nil {
				return false, err
			}
			if _, ended := t.conv.Ended(); ended {
				return true, t.conv.Err()
			}
			return false, nil
		},
		EndsCancelled: func(m Message) bool { return m.Method == "turn/completed" },
		Answer: func(a answer, cancelled bool) error {
			if err := t.c.respond(a.id, a.result); err != nil {
				t.log.Warn("codex: answer server request", "err", err)
			}
			if a.after == nil || cancelled {
				return nil
			}
			a.after()
			return t.emitAll(t.conv.Take())
		},
		Interrupt:   t.interrupt,
		Interrupted: func() error { return t.emitAll(t.conv.Interrupted()) },
		Died: func() error {
			_ = t.emitAll(t.conv.Finish())
			return exitError(t.c.Err(), t.c.Stderr())
		}}
	return loop.Run(ctx)
}

// open starts or forks the thread and starts the turn. The requests run to
// their answer even when ctx ends meanwhile: the loop then stops the turn
// the usual way.
func (t *turn) open(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), setupTimeout)
	defer cancel()
	params := map[string]any{"cwd": t.req.Workspace, "approvalPolicy": approvalPolicy, "sandbox": sandboxMode,
		"model": t.model, "serviceName": "clopen"}
	cfg, servers := threadPolicy(t.req.Permissions, t.req.MCPServers)
	if len(servers) > 0 {
		cfg["mcp_servers"] = mcpConfig(servers)
	}
	if t.req.Ephemeral {
		params["ephemeral"] = true
	}
	if t.schema != nil {
		params["sandbox"] = generateSandbox
		withholdAll(cfg)
	}
	if t.confined {
		params["sandbox"] = confinedSandbox
	}
	if len(cfg) > 0 {
		params["config"] = cfg
	}
	method := "thread/start"
	if t.req.ResumeSessionID != "" {
		method = "thread/fork"
		params["threadId"] = t.req.ResumeSessionID
		params["excludeTurns"] = true
		delete(params, "serviceName")
	}
	res, err := t.c.call(sctx, method, params)
	if startupAborted(err) {
		// Codex's own thread-startup task ended early, seen about once in
		// a few hundred turns on a loaded machine. No thread and no turn
		// exist yet, so asking again has no side effect.
		t.log.Warn("codex: thread startup aborted; asking again", "method", method, "err", err)
		res, err = t.c.call(sctx, method, params)
	}
	if err != nil {
		return t.setupError(method, err)
	}
	var th threadResult
	if err := json.Unmarshal(res, &th); err != nil || th.Thread.ID == "" {
		return &engine.Error{Kind: events.KindCrashed, Msg: "codex " + method + " answered without a thread"}
	}
	t.conv.SetThread(th.Thread.ID)
	start := map[string]any{"threadId": th.Thread.ID,
		"input": []any{map[string]any{"type": "text", "text": t.req.PromptText(), "text_elements": []any{}}},
		"model": t.model, "effort": t.effort, "summary": "auto"}
	if t.schema != nil {
		start["outputSchema"] = t.schema
	}
	res, err = t.c.call(sctx, "turn/start", start)
	if err != nil {
		return t.setupError("turn/start", err)
	}
	var ts turnStartResult
	if err := json.Unmarshal(res, &ts); err != nil || ts.Turn.ID == "" {
		return &engine.Error{Kind: events.KindCrashed, Msg: "codex turn/start answered without a turn"}
	}
	t.turnID = ts.Turn.ID
	return nil
}

// startupAborted reports whether err is codex's answer when the task that
// starts a thread stopped before it finished.
func startupAborted(err error) bool {
	var re *RPCError
	return errors.As(err, &re) && strings.Contains(re.Message, "thread startup task stopped before completing")
}

func (t *turn) setupError(op string, err error) error {
	if errors.Is(err, errClosed) {
		return exitError(t.c.Err(), t.c.Stderr())
	}
	return rpcError(op, err)
}

// interrupt asks codex to stop the turn; its answer is not awaited (the
// turn/completed that follows is).
func (t *turn) interrupt() {
	if err := t.c.Send(map[string]any{"id": t.c.NextID(), "method": "turn/interrupt",
		"params": map[string]any{"threadId": t.conv.Thread(), "turnId": t.turnID}}); err != nil {
		t.log.Warn("codex: send turn/interrupt", "err", err)
	}
}

// message handles one notification or server request.
func (t *turn) message(ctx context.Context, m Message) error {
	if m.IsRequest() {
		return t.serverRequest(ctx, m)
	}
	switch m.Method {
	case "configWarning", "deprecationNotice":
		var p warningParams
		_ = json.Unmarshal(m.Params, &p)
		t.log.Info("codex: "+m.Method, "message", cmp.Or(p.Summary, p.Message))
	case "error":
		var p errorParams
		if json.Unmarshal(m.Params, &p) == nil && p.WillRetry {
			t.log.Info("codex: retrying after an error", "message", p.Error.Message)
		}
	default:
		if !Known(m.Method) {
			if _, seen := t.unknown.LoadOrStore(m.Method, true); !seen {
				t.log.Info("codex: ignoring unknown notification", "method", m.Method)
			}
		}
	}
	return t.emitAll(t.conv.Convert(m))
}

func (t *turn) emitAll(outs []events.Output) error { return t.emit.All(outs) }

// mcpNames are the names of the request's MCP servers.
func mcpNames(servers []engine.MCPServer) []string {
	names := make([]string, 0, len(servers))
	for _, s := range servers {
		names = append(names, s.Name)
	}
	return names
}

// mcpConfig is the mcp_servers thread config that connects MCP servers
// (streamable HTTP; headers as http_headers, never bearer_token).
func mcpConfig(servers []engine.MCPServer) map[string]any {
	all := map[string]any{}
	for _, s := range servers {
		srv := map[string]any{"url": s.URL}
		if len(s.Headers) > 0 {
			srv["http_headers"] = s.Headers
		}
		all[s.Name] = srv
	}
	return all
}
