package acp

import (
	"cmp"
	"context"
	"encoding/json"

	"clopen.dev/services/engine-worker/internal/engine"
)

// permission handles session/request_permission: the call's tool_use goes
// out first (the question must be on screen before anyone answers it),
// then the run's Interaction decides in its own goroutine (a person may
// take minutes; the turn must still notice an interrupt), and answer
// writes the decision back. Harness tools are allowed without asking.
func (t *turn) permission(ctx context.Context, f Frame) error {
	var r PermissionRequest
	if err := json.Unmarshal(f.Params, &r); err != nil || r.ToolCall.ToolCallID == "" {
		return t.a.p.conn.Reply(f.ID, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
	}
	outs, name, input, harness := t.conv.Permission(r.ToolCall, r.Options)
	if err := t.emitAll(outs); err != nil {
		return err
	}
	if harness {
		return t.reply(f.ID, r.Options, true)
	}
	if t.cancelled || ctx.Err() != nil {
		return t.a.p.conn.Reply(f.ID, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
	}
	t.open[string(f.ID)] = f.ID
	t.dialogs.Go(ctx, func(ctx context.Context) decision {
		d, err := t.req.Interaction.Permit(ctx, engine.PermissionRequest{ToolUseID: r.ToolCall.ToolCallID, Tool: name, Input: input})
		return decision{reqID: f.ID, toolID: r.ToolCall.ToolCallID, allow: d.Allow, msg: d.Message, err: err, opts: r.Options}
	})
	return nil
}

// answer writes a decision back, unless the request was already answered
// (cancelled), and records a refusal as the call's error result.
func (t *turn) answer(d decision) error {
	if _, open := t.open[string(d.reqID)]; !open {
		return nil
	}
	delete(t.open, string(d.reqID))
	if d.err != nil {
		t.log.Info("acp: permission prompt not answered", "tool_use_id", d.toolID, "err", d.err)
		return t.a.p.conn.Reply(d.reqID, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
	}
	if err := t.reply(d.reqID, d.opts, d.allow); err != nil {
		return err
	}
	if !d.allow {
		return t.emitAll(t.conv.Denied(d.toolID, cmp.Or(d.msg, "The user denied this tool call.")))
	}
	return nil
}

// reply selects the agent's allow-once (or reject-once) option; lacking
// one, the always variant; lacking both, the outcome is cancelled.
func (t *turn) reply(id json.RawMessage, opts []PermissionOption, allow bool) error {
	kinds := []string{"reject_once", "reject_always"}
	if allow {
		kinds = []string{"allow_once", "allow_always"}
	}
	for _, k := range kinds {
		for _, o := range opts {
			if o.Kind == k {
				return t.a.p.conn.Reply(id, map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": o.OptionID}})
			}
		}
	}
	return t.a.p.conn.Reply(id, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
}

// cancelOpen answers every permission request still open with cancelled,
// as ACP requires after session/cancel.
func (t *turn) cancelOpen() {
	for key, id := range t.open {
		_ = t.a.p.conn.Reply(id, map[string]any{"outcome": map[string]any{"outcome": "cancelled"}})
		delete(t.open, key)
	}
}
