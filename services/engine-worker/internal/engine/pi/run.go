package pi

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// setupTimeout bounds the commands that open a turn.
const setupTimeout = 60 * time.Second

// turn is one Run on one pi process: the converter, the dialogs in flight,
// and how the turn is being stopped.
type turn struct {
	c        *conn
	req      engine.Request
	emit     engine.Emit
	log      *slog.Logger
	cfg      *Config
	unknown  *sync.Map
	model    string
	provider string
	sessions string // the project's sessions dir

	conv    Converter
	dialogs *engine.Dialogs[answer] // the dialogs in flight
}

// answer is a decided dialog, written back by the turn loop.
type answer struct {
	id     string
	fields map[string]any
}

// run opens the session, sends the prompt and relays the events until
// agent_end. reusable is true when pi ended the turn itself and may take
// the chat's next one.
func (t *turn) run(ctx context.Context) (reusable bool, err error) {
	t.conv = Converter{Model: t.model, Provider: t.provider, MCPServers: t.c.mcp}
	t.c.Queue.Drain() // what arrived while the process was idle belongs to no turn
	if err := t.open(ctx); err != nil {
		return !t.c.Exited(), err
	}
	t.dialogs = engine.NewDialogs[answer](ctx)
	defer t.dialogs.Stop()
	// A cancel aborts; the group is then stopped after a short grace in
	// which pi can save what it has.
	one := func(ev Event) (bool, error) {
		if err := t.event(t.dialogs.Context(), ev); err != nil {
			return false, err
		}
		if t.conv.Ended() {
			return true, t.conv.Err()
		}
		return false, nil
	}
	handle := func(ev Event) (bool, error) {
		var more []Event
		if ev.Type == "agent_end" && t.cfg.Retry && t.conv.Failing() {
			var retrying bool
			if more, retrying = t.retryFollows(ctx); !retrying {
				if ended, err := one(ev); ended || err != nil {
					return ended, err
				}
			} // else not the turn's end: pi tries the call again
		} else if ended, err := one(ev); ended || err != nil {
			return ended, err
		}
		for _, m := range more { // what came before get_state's answer, in order
			if ended, err := one(m); ended || err != nil {
				return ended, err
			}
		}
		return false, nil
	}
	loop := engine.TurnLoop[Event, answer]{Child: t.c.Child, Queue: t.c.Queue, Answers: t.dialogs.Answers(), Log: t.log,
		Stuck:          "pi: no agent_end after abort; stopped the process",
		InterruptGrace: t.cfg.InterruptGrace, CancelGrace: t.cfg.CancelGrace,
		Handle: handle,
		Answer: func(a answer, _ bool) error {
			if err := t.c.uiRespond(a.id, a.fields); err != nil {
				t.log.Warn("pi: answer dialog", "err", err)
			}
			return nil
		},
		Interrupt: func() {
			if err := t.c.Send(map[string]any{"type": "abort"}); err != nil {
				t.log.Warn("pi: send abort", "err", err)
			}
		},
		Interrupted: func() error { return t.emitAll(t.conv.Interrupted()) },
		Died: func() error {
			_ = t.emitAll(t.conv.Finish())
			return exitError(t.c.Err(), t.c.Stderr())
		}}
	return loop.Run(ctx)
}

// retryWait bounds the command that tells whether pi retries.
const retryWait = 10 * time.Second

// retryFollows tells, at the agent_end of a failed model call, whether pi
// retries it: pi sends auto_retry_start right after that agent_end, in the
// same step, so once a command sent now is answered the events before its
// answer say. It returns those events.
func (t *turn) retryFollows(ctx context.Context) (more []Event, retrying bool) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), retryWait)
	defer cancel()
	if _, err := t.c.call(cctx, map[string]any{"type": "get_state"}); err != nil {
		t.log.Warn("pi: ask whether it retries", "err", err)
	}
	more, _ = t.c.Queue.Drain()
	for _, ev := range more {
		if ev.Type == "auto_retry_start" {
			return more, true
		}
	}
	return more, false
}

// open puts pi on the turn's session, sets model and thinking level, and
// sends the prompt. The commands run to their answer even when ctx ends
// meanwhile: the loop then stops the turn the usual way.
func (t *turn) open(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), setupTimeout)
	defer cancel()
	call := func(cmd map[string]any) (json.RawMessage, error) {
		data, err := t.c.call(sctx, cmd)
		if errors.Is(err, errClosed) {
			return nil, exitError(t.c.Err(), t.c.Stderr())
		}
		return data, err
	}
	if err := t.session(call); err != nil {
		return err
	}
	data, err := call(map[string]any{"type": "set_model", "provider": t.provider, "modelId": t.model})
	if err != nil {
		return err
	}
	var m ModelInfo
	_ = json.Unmarshal(data, &m) // a model pi describes oddly runs with thinking off
	level := ClampThinking(m, t.req.Effort)
	if _, err := call(map[string]any{"type": "set_thinking_level", "level": level}); err != nil {
		return err
	}
	data, err = call(map[string]any{"type": "get_state"})
	if err != nil {
		return err
	}
	var st state
	if err := json.Unmarshal(data, &st); err != nil || st.SessionID == "" {
		return &engine.Error{Kind: events.KindCrashed, Msg: "pi get_state named no session"}
	}
	t.c.session, t.c.fresh = st.SessionID, false
	t.conv.SetSession(st.SessionID)
	if err := t.emitAll(t.conv.Init()); err != nil {
		return err
	}
	// The message goes as it is: RPC prompts are not scanned for @file
	// references (only the CLI's arguments are), so a prompt that starts
	// with @ needs no escaping (TestPromptStartingWithAt).
	if _, err := call(map[string]any{"type": "prompt", "message": t.req.PromptText()}); err != nil {
		_ = t.emitAll([]events.Output{events.Notification{SessionID: st.SessionID, Level: events.LevelWarning,
			Title: "pi did not accept the prompt", Message: err.Error()}})
		return err
	}
	return nil
}

// session starts a new session, or clones the one the turn resumes.
func (t *turn) session(call func(map[string]any) (json.RawMessage, error)) error {
	resume := t.req.ResumeSessionID
	if resume == "" {
		if t.c.fresh {
			return nil // pi started on an empty session
		}
		_, err := call(map[string]any{"type": "new_session"})
		return err
	}
	if resume != t.c.session {
		path, ok := findSession(t.sessions, resume)
		if !ok {
			return &engine.Error{Kind: events.KindInvalidRequest, Msg: "pi has no session " + resume + " in this project"}
		}
		if err := relocate(path, t.req.Workspace); err != nil {
			return err
		}
		data, err := call(map[string]any{"type": "switch_session", "sessionPath": path})
		if err != nil {
			return err
		}
		if cancelledBy(data) {
			return &engine.Error{Kind: events.KindInvalidRequest, Msg: "pi refused to switch to session " + resume}
		}
	}
	data, err := call(map[string]any{"type": "clone"})
	if err == nil && cancelledBy(data) {
		err = &engine.Error{Kind: events.KindInvalidRequest, Msg: "pi refused to fork session " + resume}
	}
	return err
}

func cancelledBy(data json.RawMessage) bool {
	var d struct {
		Cancelled bool `json:"cancelled"`
	}
	return json.Unmarshal(data, &d) == nil && d.Cancelled
}

// event handles one event or UI request.
func (t *turn) event(ctx context.Context, ev Event) error {
	switch ev.Type {
	case "extension_ui_request":
		return t.dialog(ctx, ev)
	case "extension_error":
		t.log.Warn("pi: extension error", "err", ev.Error)
	case "auto_retry_start":
		t.log.Info("pi: retrying a model call", "err", ev.ErrorMessage)
	default:
		if !Known(ev.Type) {
			if _, seen := t.unknown.LoadOrStore(ev.Type, true); !seen {
				t.log.Info("pi: ignoring unknown event", "event_type", ev.Type)
			}
		}
	}
	return t.emitAll(t.conv.Convert(ev))
}

func (t *turn) emitAll(outs []events.Output) error { return t.emit.All(outs) }
