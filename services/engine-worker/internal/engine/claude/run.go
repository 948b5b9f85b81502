package claude

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// turn is one Run on one process: the converter, the permission prompts in
// flight, and how the turn is being stopped.
type turn struct {
	p    *proc
	req  engine.Request
	emit engine.Emit
	log  *slog.Logger
	conv Converter

	dialogs  *engine.Dialogs[answer] // permission prompts being decided
	toolUses map[string]bool
	unknown  *sync.Map // line types already reported as unknown, per instance
	session  string    // the engine session the CLI reports

	interruptGrace time.Duration // how long an interrupted CLI gets to end the turn
	cancelGrace    time.Duration // how long a cancelled one gets before its group is stopped
}

type answer struct {
	id       string
	response any
}

// outcome is how a turn ended.
type outcome struct {
	session string // the engine session of the result, "" without one
	result  bool   // the CLI ended the turn with a result: the process is reusable
}

// run writes the prompt and relays the process's lines until the turn's
// result. ctx ending stops the turn: an interrupt asks the CLI to stop and
// waits for its result; anything else (cancel) also asks, emits nothing
// more, and stops the process group at the result or after cancelGrace.
func (t *turn) run(ctx context.Context) (outcome, error) {
	t.dialogs = engine.NewDialogs[answer](ctx)
	defer t.dialogs.Stop()
	if err := t.p.prompt(promptContent(t.req)); err != nil {
		return outcome{}, t.crashed(fmt.Errorf("write prompt: %w", err))
	}
	done := ctx.Done()
	var deadline <-chan time.Time
	cancelled := false
	for {
		lines, closed := t.p.lines.Drain()
		if closed {
			if cancelled {
				t.p.Stop(context.Background())
				return outcome{}, context.Cause(ctx)
			}
			if done == nil { // interrupted, and the CLI quit instead of ending the turn
				return outcome{}, t.endInterrupted()
			}
			_ = t.emitAll(t.conv.Finish())
			return outcome{}, t.crashed(nil)
		}
		for _, b := range lines {
			l, err := DecodeLine(b)
			if err != nil {
				t.log.Debug("claude: undecodable line", "err", err)
				continue
			}
			if cancelled { // nothing more goes out; wait for the turn's end
				if l.Type == "result" {
					t.p.Stop(context.Background())
					return outcome{}, context.Cause(ctx)
				}
				continue
			}
			end, err := t.line(t.dialogs.Context(), l)
			if err != nil {
				return outcome{}, err
			}
			if end {
				return outcome{session: l.SessionID, result: true}, ResultError(l)
			}
		}
		if len(lines) > 0 {
			continue
		}
		select {
		case <-t.p.lines.Notify():
		case a := <-t.dialogs.Answers():
			if err := t.p.respond(a.id, a.response); err != nil {
				t.log.Warn("claude: answer permission prompt", "err", err)
			}
		case <-done:
			done = nil
			if _, err := t.p.control(map[string]any{"subtype": "interrupt"}); err != nil {
				t.log.Warn("claude: send interrupt", "err", err)
			}
			if !errors.Is(context.Cause(ctx), engine.ErrInterrupted) {
				// Cancel: the interrupt above lets the CLI end the turn and
				// save its session for a short grace; then the group is
				// stopped whether it has or not.
				cancelled = true
				deadline = time.After(t.cancelGrace)
				continue
			}
			deadline = time.After(t.interruptGrace)
		case <-deadline:
			t.p.Stop(context.Background())
			if cancelled {
				return outcome{}, context.Cause(ctx)
			}
			t.log.Warn("claude: no result after interrupt; stopped the process")
			return outcome{}, t.endInterrupted()
		}
	}
}

// endInterrupted ends an interrupted turn the CLI did not end itself.
func (t *turn) endInterrupted() error {
	outs := append(t.conv.Finish(), events.Result{Subtype: events.ResultErrorDuringExecution, SessionID: t.session,
		Errors: []string{"Interrupted by user"}})
	return t.emitAll(outs)
}

// line handles one stdout line; end is true for the turn's result.
func (t *turn) line(ctx context.Context, l Line) (end bool, err error) {
	if l.SessionID != "" {
		t.session = l.SessionID
	}
	switch l.Type {
	case "control_request":
		return false, t.controlRequest(ctx, l)
	case "control_response":
		if r := l.Response; r != nil && r.Subtype == "error" {
			t.log.Warn("claude: control request failed", "request_id", r.RequestID, "err", r.Error)
		}
		return false, nil
	}
	if !Known(l.Type) {
		if _, seen := t.unknown.LoadOrStore(l.Type, true); !seen {
			t.log.Info("claude: ignoring unknown line type", "line_type", l.Type)
		}
	}
	if err := t.emitAll(t.conv.Convert(l)); err != nil {
		return false, err
	}
	return l.Type == "result", nil
}

func (t *turn) emitAll(outs []events.Output) error {
	for _, o := range outs {
		if a, ok := o.(events.AssistantMessage); ok {
			for _, b := range a.Content {
				if tu, ok := b.(events.ToolUseBlock); ok {
					t.toolUses[tu.ID] = true
				}
			}
		}
		if err := t.emit(o); err != nil {
			return err
		}
	}
	return nil
}

// controlRequest answers the CLI's questions: can_use_tool goes to the
// run's Interaction (in its own goroutine: the user may take minutes, and
// the turn must still notice an interrupt); anything else is refused.
func (t *turn) controlRequest(ctx context.Context, l Line) error {
	r := l.Request
	if r == nil || r.Subtype != "can_use_tool" {
		subtype := ""
		if r != nil {
			subtype = r.Subtype
		}
		t.log.Info("claude: refusing control request", "subtype", subtype)
		return t.p.Send(map[string]any{"type": "control_response", "response": map[string]any{
			"subtype": "error", "request_id": l.RequestID, "error": "not supported by Clopen: " + subtype}})
	}
	name := ToolName(r.ToolName)
	ask := r.RequiresUserInteraction || name == string(events.ToolAskUserQuestion)
	if ask && !t.toolUses[r.ToolUseID] {
		// The question must be on screen before anyone can answer it.
		if err := t.emitAll([]events.Output{events.AssistantMessage{MessageBase: t.conv.base(l, r.ToolUseID, ""),
			StopReason: events.StopToolUse, Content: []events.Block{events.ToolUseBlock{ID: r.ToolUseID, Name: name,
				Input: CanonicalInput(name, r.Input)}}}}); err != nil {
			return err
		}
	}
	t.dialogs.Go(ctx, func(ctx context.Context) answer {
		return answer{id: l.RequestID, response: t.decide(ctx, name, ask, r)}
	})
	return nil
}

// decide asks the Interaction and builds the CLI's permission result.
func (t *turn) decide(ctx context.Context, name string, ask bool, r *ControlRequest) map[string]any {
	input := r.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	if ask {
		var q events.AskUserQuestionInput
		if err := json.Unmarshal(input, &q); err != nil {
			return deny("the question could not be read: " + err.Error())
		}
		answers, err := t.req.Interaction.AskUser(ctx, r.ToolUseID, q)
		if err != nil {
			return deny("the question was not answered: " + err.Error())
		}
		var fields map[string]any
		if err := json.Unmarshal(input, &fields); err != nil || fields == nil {
			fields = map[string]any{}
		}
		fields["answers"] = answers
		return map[string]any{"behavior": "allow", "updatedInput": fields}
	}
	d, err := t.req.Interaction.Permit(ctx, engine.PermissionRequest{ToolUseID: r.ToolUseID, Tool: name,
		Input: CanonicalInput(name, input)})
	if err != nil {
		return deny("the permission prompt was not answered: " + err.Error())
	}
	if !d.Allow {
		return deny(cmp.Or(d.Message, "denied"))
	}
	// The CLI runs updatedInput: its own shape, not the canonical one.
	return map[string]any{"behavior": "allow", "updatedInput": input}
}

func deny(msg string) map[string]any { return map[string]any{"behavior": "deny", "message": msg} }

// crashed is the error of a process that ended without a result.
func (t *turn) crashed(cause error) error {
	if cause != nil {
		return &engine.Error{Kind: events.KindCrashed, Msg: cause.Error(), Err: cause}
	}
	<-t.p.Done()
	return exitError(t.p.Err(), t.p.Stderr())
}

// promptContent is the prompt as Anthropic content blocks.
func promptContent(req engine.Request) []map[string]any {
	var out []map[string]any
	for _, b := range req.Prompt {
		switch b := b.(type) {
		case events.TextBlock:
			out = append(out, map[string]any{"type": "text", "text": b.Text})
		case events.ImageBlock:
			out = append(out, map[string]any{"type": "image",
				"source": map[string]any{"type": "base64", "media_type": b.MediaType, "data": b.Data}})
		case events.DocumentBlock:
			doc := map[string]any{"type": "document",
				"source": map[string]any{"type": "base64", "media_type": b.MediaType, "data": b.Data}}
			if b.Title != "" {
				doc["title"] = b.Title
			}
			out = append(out, doc)
		}
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"type": "text", "text": req.PromptText()})
	}
	return out
}
