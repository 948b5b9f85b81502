package pi

import (
	"context"
	"encoding/json"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// The titles of the dialogs Clopen's extension opens.
const (
	titlePermit = "clopen.permit"
	titleAsk    = "clopen.ask"
)

// dialog answers an extension UI request. Clopen's own dialogs go to the
// run's Interaction in their own goroutine (a person may take minutes, and
// the turn must still notice an interrupt), the call they are about on
// screen first. Other extensions' dialogs are dismissed; their
// notifications become notification outputs.
func (t *turn) dialog(ctx context.Context, ev Event) error {
	switch {
	case ev.Method == "input" && ev.Title == titlePermit:
		var p struct {
			ToolCallID string          `json:"toolCallId"`
			ToolName   string          `json:"toolName"`
			Input      json.RawMessage `json:"input"`
		}
		if err := json.Unmarshal([]byte(ev.Placeholder), &p); err != nil {
			return t.c.uiRespond(ev.ID, map[string]any{"cancelled": true})
		}
		t.conv.toolUse(p.ToolCallID, p.ToolName, p.Input)
		name := ToolName(p.ToolName)
		req := engine.PermissionRequest{ToolUseID: p.ToolCallID, Tool: name, Input: CanonicalInput(name, p.Input)}
		return t.ask(ctx, func(ctx context.Context) answer {
			d, err := t.req.Interaction.Permit(ctx, req)
			if err != nil {
				d = engine.Decision{Message: "the permission prompt was not answered: " + err.Error()}
			}
			return answer{id: ev.ID, fields: map[string]any{"value": string(mustJSON(map[string]any{"allow": d.Allow, "message": d.Message}))}}
		})
	case ev.Method == "input" && ev.Title == titleAsk:
		var p struct {
			ToolCallID string `json:"toolCallId"`
		}
		var q events.AskUserQuestionInput
		if json.Unmarshal([]byte(ev.Placeholder), &p) != nil || json.Unmarshal([]byte(ev.Placeholder), &q) != nil {
			return t.c.uiRespond(ev.ID, map[string]any{"cancelled": true})
		}
		return t.ask(ctx, func(ctx context.Context) answer {
			got, err := t.req.Interaction.AskUser(ctx, p.ToolCallID, q)
			reply := map[string]any{"answers": got}
			if err != nil {
				reply = map[string]any{"error": "The question was not answered: " + err.Error()}
			}
			return answer{id: ev.ID, fields: map[string]any{"value": string(mustJSON(reply))}}
		})
	case ev.Method == "notify":
		var msg string
		_ = json.Unmarshal(ev.Message, &msg)
		level := events.NotificationLevel(ev.NotifyType)
		if !level.Valid() {
			level = events.LevelInfo
		}
		return t.emitAll([]events.Output{events.Notification{SessionID: t.c.session, Level: level, Title: "pi", Message: msg}})
	case ev.Method == "select" || ev.Method == "confirm" || ev.Method == "input" || ev.Method == "editor":
		t.log.Info("pi: dismissing an extension dialog", "method", ev.Method, "title", ev.Title)
		return t.c.uiRespond(ev.ID, map[string]any{"cancelled": true})
	}
	return nil // setStatus, setWidget, setTitle, set_editor_text: nothing to show
}

// ask emits what the dialog put on screen and decides it in a goroutine.
func (t *turn) ask(ctx context.Context, decide func(context.Context) answer) error {
	if err := t.emitAll(t.conv.Take()); err != nil {
		return err
	}
	t.dialogs.Go(ctx, decide)
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{}`)
	}
	return b
}
