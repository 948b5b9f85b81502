package acp

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// turn is one session/prompt on one process: the converter, the
// permission prompts in flight, and how the turn is being stopped.
type turn struct {
	e       *Engine
	a       *agent
	req     engine.Request
	log     *slog.Logger
	conv    *Converter
	live    *liveSession
	emitFn  engine.Emit
	secrets []string

	dialogs   *engine.Dialogs[decision]  // permission prompts being decided
	open      map[string]json.RawMessage // permission requests not yet answered: request id → tool call id
	cancelled bool                       // hard stop: nothing more goes out
	gaveUp    *engine.Error              // the agent retried past the budget: the turn fails with this
	retried   int                        // the HTTP status of the last failed model call the agent retried
	answered  bool                       // the agent put out more than notices since the loop last looked
	loaded    bool                       // its session was reopened by session/load, whose replay may still be arriving
}

// decision is a permission prompt the Interaction decided.
type decision struct {
	reqID  json.RawMessage
	toolID string
	allow  bool
	msg    string
	err    error
	opts   []PermissionOption
}

// run prompts and relays the agent's messages until the prompt's response.
// reusable says whether the process may take another turn.
func (t *turn) run(ctx context.Context, sid string) (reusable bool, err error) {
	c := t.a.p.conn
	t.drainStale()
	t.dialogs = engine.NewDialogs[decision](ctx)
	defer t.dialogs.Stop()
	t.open = map[string]json.RawMessage{}
	promptID, err := c.Start("session/prompt", map[string]any{"sessionId": sid,
		"prompt": promptBlocks(t.req, t.a.info.AgentCapabilities.PromptCapabilities)})
	if err != nil {
		return false, exitError(t.e.p.Name, t.a.p)
	}
	done := ctx.Done()
	var deadline <-chan time.Time
	interrupted := false
	retry := newRetries("")
	if t.e.p.RetryLog != nil {
		retry = newRetries(t.e.p.RetryLog(t.a.home, sid))
	}
	defer retry.stop()
	tick := retry.tick()
	for {
		frames, closed := c.inbox.Drain()
		for _, f := range frames {
			if f.Kind() == KindResponse {
				if idKey(f.ID) != idKey(promptID) {
					continue
				}
				if t.gaveUp != nil {
					return true, t.giveUp()
				}
				return t.end(ctx, f, interrupted)
			}
			if err := t.frame(t.dialogs.Context(), sid, f); err != nil {
				t.abandon()
				return false, err
			}
		}
		if closed {
			switch {
			case t.cancelled:
				return false, context.Cause(ctx)
			case t.gaveUp != nil:
				return false, t.giveUp()
			case interrupted:
				return false, t.emitAll(t.conv.Interrupted())
			}
			_ = t.emitAll(t.conv.Finish())
			return false, exitError(t.e.p.Name, t.a.p)
		}
		if t.answered {
			// The model answers again: a retry that worked spends no
			// more of the budget, and the next failure starts a new one.
			t.answered = false
			retry.recovered()
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-c.inbox.Notify():
		case d := <-t.dialogs.Answers():
			if err := t.answer(d); err != nil {
				t.abandon()
				return false, err
			}
		case <-tick:
			tick = retry.tick()
			for _, line := range retry.read() {
				if n, ok := retry.saw(line, sid, t.e.p, t.e.cfg.RetryBudget); ok && !t.cancelled {
					t.retried = retry.status
					if err := t.emitAll([]events.Output{n}); err != nil {
						t.abandon()
						return false, err
					}
				}
			}
		case <-retry.expired():
			// The agent would go on retrying: the turn fails with the
			// status, and the agent is stopped softly.
			tick = nil
			t.gaveUp = engine.RetryGaveUp(t.e.p.Name, retry.status, t.e.cfg.RetryBudget, retry.last)
			t.answered = false
			t.log.Warn("acp: gave up on the agent's retries", "status", retry.status, "retries", retry.n)
			if err := c.Notify("session/cancel", map[string]any{"sessionId": sid}); err != nil {
				t.log.Warn("acp: send session/cancel", "err", err)
			}
			t.cancelOpen()
			interrupted = true
			deadline = time.After(min(giveUpGrace, t.e.cfg.InterruptGrace))
		case <-done:
			done = nil
			t.dialogs.Cancel(context.Cause(ctx))
			if err := c.Notify("session/cancel", map[string]any{"sessionId": sid}); err != nil {
				t.log.Warn("acp: send session/cancel", "err", err)
			}
			t.cancelOpen()
			if errors.Is(context.Cause(ctx), engine.ErrInterrupted) {
				interrupted = true
				deadline = time.After(t.e.cfg.InterruptGrace)
				continue
			}
			// Cancel: the agent gets a short grace to end the prompt
			// (saving its session); then the group is stopped.
			t.cancelled = true
			deadline = time.After(t.e.cfg.CancelGrace)
		case <-deadline:
			t.a.p.Stop(context.Background())
			if t.cancelled {
				return false, context.Cause(ctx)
			}
			t.log.Warn("acp: no response after session/cancel; stopped the process")
			if t.gaveUp != nil {
				return false, t.giveUp()
			}
			return false, t.emitAll(t.conv.Interrupted())
		}
	}
}

// giveUp ends a turn whose retries ran past the budget with their status.
func (t *turn) giveUp() error {
	if err := t.emitAll(t.conv.Failed(t.gaveUp.Msg)); err != nil {
		return err
	}
	return t.gaveUp
}

// end handles the prompt's response.
func (t *turn) end(ctx context.Context, f Frame, interrupted bool) (bool, error) {
	if t.cancelled {
		t.a.p.Stop(context.Background())
		return false, context.Cause(ctx)
	}
	if f.Error != nil {
		if interrupted {
			return true, t.emitAll(t.conv.Interrupted())
		}
		err := withStatus(rpcError("session/prompt", f.Error), t.retried)
		if eerr := t.emitAll(t.conv.Failed(redactText(err.Error(), t.secrets))); eerr != nil {
			return true, eerr
		}
		return true, err
	}
	var r PromptResponse
	if err := json.Unmarshal(f.Result, &r); err != nil {
		_ = t.emitAll(t.conv.Finish())
		return false, &engine.Error{Kind: events.KindCrashed, Msg: "session/prompt: undecodable response: " + err.Error(), Err: err}
	}
	if interrupted && r.StopReason != StopCancelled {
		r.StopReason = StopCancelled // a turn that ended as it was interrupted is still an interrupted turn
	}
	if r.Usage == nil && t.e.p.SessionUsage != nil {
		t.sessionUsage()
	}
	outs := t.conv.End(r)
	if err := t.emitAll(outs); err != nil {
		return true, err
	}
	if res, ok := outs[len(outs)-1].(events.Result); ok && res.IsError() && r.StopReason != StopCancelled {
		kind := kindOf(res.Errors[0])
		if r.StopReason == StopRefusal || r.StopReason == StopMaxTurnRequests {
			kind = events.KindInvalidRequest
		}
		return true, &engine.Error{Kind: kind, Msg: res.Errors[0]}
	}
	return true, nil
}

// sessionUsage gives the converter the turn's usage from the agent's own
// session files (running totals, so the turn's share is the difference).
func (t *turn) sessionUsage() {
	u, cost, err := t.e.p.SessionUsage(t.a.home, t.req.SessionID, t.conv.SessionID)
	if err != nil {
		t.log.Debug("acp: session usage", "err", err)
		return
	}
	prev := t.live.usage
	t.live.usage = u
	turn := events.TokenUsage{InputTokens: u.InputTokens - prev.InputTokens, OutputTokens: u.OutputTokens - prev.OutputTokens,
		CacheReadInputTokens: u.CacheReadInputTokens - prev.CacheReadInputTokens, CacheCreationInputTokens: u.CacheCreationInputTokens - prev.CacheCreationInputTokens}
	t.conv.SetUsage(turn, cost)
}

// frame handles one request or notification from the agent.
func (t *turn) frame(ctx context.Context, sid string, f Frame) error {
	switch f.Method {
	case "session/update":
		var n SessionNotification
		if err := json.Unmarshal(f.Params, &n); err != nil || (n.SessionID != "" && n.SessionID != sid) {
			return nil
		}
		u, err := decodeUpdate(n.Update)
		if err != nil {
			return nil
		}
		if !Known(u.SessionUpdate) {
			if _, seen := t.e.unknown.LoadOrStore("update:"+u.SessionUpdate, true); !seen {
				t.log.Info("acp: ignoring unknown session update (logged once)", "kind", u.SessionUpdate)
			}
			return nil
		}
		if t.cancelled {
			return nil
		}
		return t.emitAll(t.conv.Update(u))
	case "session/request_permission":
		return t.permission(ctx, f)
	case "fs/read_text_file":
		var r ReadTextFileRequest
		if err := json.Unmarshal(f.Params, &r); err != nil {
			return t.a.p.conn.ReplyError(f.ID, CodeInvalidParams, err.Error())
		}
		text, err := readTextFile(t.req.Workspace, r)
		if err != nil && t.e.p.MissingFileEmpty && errors.Is(err, fs.ErrNotExist) {
			text, err = "", nil
		}
		if err != nil {
			code, msg := fsError(err)
			return t.a.p.conn.ReplyError(f.ID, code, msg)
		}
		return t.a.p.conn.Reply(f.ID, map[string]any{"content": text})
	case "fs/write_text_file":
		var r WriteTextFileRequest
		if err := json.Unmarshal(f.Params, &r); err != nil {
			return t.a.p.conn.ReplyError(f.ID, CodeInvalidParams, err.Error())
		}
		if err := writeTextFile(t.req.Workspace, r); err != nil {
			code, msg := fsError(err)
			return t.a.p.conn.ReplyError(f.ID, code, msg)
		}
		return t.a.p.conn.Reply(f.ID, nil)
	}
	if f.Kind() == KindRequest {
		t.log.Info("acp: refusing an agent request", "method", f.Method)
		return t.a.p.conn.ReplyError(f.ID, CodeMethodNotFound, "not supported by Clopen: "+f.Method)
	}
	return nil
}

// replayQuiet is how long the inbox must stay empty after a session/load
// before the prompt goes out, and replayWait the longest that takes: some
// agents (Gemini CLI) send a load's history replay after answering it, and
// replayed text that arrived once the prompt was out would be taken for
// the new answer.
const (
	replayQuiet = 300 * time.Millisecond
	replayWait  = 5 * time.Second
)

// drainStale handles what arrived while the process was idle or the
// session was being opened (a load's history replay, late updates of the
// previous turn): notifications are dropped, requests refused. After a
// load it waits for the replay to go quiet.
func (t *turn) drainStale() {
	q := t.a.p.conn.inbox
	drop := func() (n int) {
		frames, _ := q.Drain()
		for _, f := range frames {
			if f.Kind() == KindRequest {
				_ = t.a.p.conn.ReplyError(f.ID, CodeInternal, "no turn is running")
			}
		}
		return len(frames)
	}
	n := drop()
	if !t.loaded {
		return
	}
	deadline := time.After(replayWait)
	for {
		select {
		case <-q.Notify():
			n += drop()
		case <-time.After(replayQuiet):
			t.log.Debug("acp: load replay dropped", "frames", n)
			return
		case <-deadline:
			t.log.Warn("acp: the load replay did not go quiet; prompting anyway", "frames", n)
			return
		}
	}
}

// abandon stops a turn that can no longer publish: the agent is told to
// cancel and the process is stopped.
func (t *turn) abandon() {
	_ = t.a.p.conn.Notify("session/cancel", map[string]any{"sessionId": t.conv.SessionID})
	t.a.p.Stop(context.Background())
}

// emitAll publishes outputs, with the credential's secrets blanked out.
func (t *turn) emitAll(outs []events.Output) error {
	for _, o := range outs {
		if _, notice := o.(events.Notification); !notice {
			t.answered = true
		}
		if err := t.emitFn(redact(o, t.secrets)); err != nil {
			return err
		}
	}
	return nil
}
