package live

import (
	"context"
	"encoding/json"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/chats"
)

// command serves send, cancel, interrupt, answer, skills.available and
// models.list: the same service calls, with the same checks, as their REST
// routes.
func (c *conn) command(ctx context.Context, f events.ClientFrame) (any, error) {
	switch f.Op {
	case events.WSOpSkillsAvailable:
		return c.available(ctx, f)
	case events.WSOpModelsList:
		return c.h.d.Engines.Models(ctx, c.p, f.Engine, f.AccountID, "")
	case events.WSOpSend:
		var prompt []json.RawMessage
		if len(f.Prompt) > 0 {
			var err error
			if prompt, err = promptBlocks(f.Prompt); err != nil {
				return nil, err
			}
		}
		t, err := chats.NewTurn(f.Session, api.SendMessage{Text: f.Text, Prompt: prompt, Engine: f.Engine, Model: f.Model,
			Effort: f.Effort, ProfileID: f.ProfileID, ClientRequestID: f.RequestID}, c.h.cfg.MaxPromptBytes)
		if err != nil {
			return nil, err
		}
		return c.h.d.Chats.Send(ctx, c.p, t)
	case events.WSOpCancel:
		return c.h.d.Chats.Cancel(ctx, c.p, f.Session, f.Run)
	case events.WSOpInterrupt:
		return c.h.d.Chats.Interrupt(ctx, c.p, f.Session, f.Run)
	case events.WSOpAnswer:
		return c.h.d.Chats.Answer(ctx, c.p, f.Session, api.Answer{RunID: f.Run, ToolUseID: f.ToolUseID,
			Answers: f.Answers, Decision: f.Decision, Message: f.Message})
	}
	return nil, invalid("op: unknown op %q", f.Op)
}

// available lists the "/" picker. A session stands for its project and,
// unless the frame names a profile, the session's profile; the session
// lookup is the access check.
func (c *conn) available(ctx context.Context, f events.ClientFrame) ([]events.AvailableSkill, error) {
	project, profile := f.ProjectID, deref(f.ProfileID)
	if f.Session != "" {
		s, err := c.h.d.Chats.Session(ctx, c.p, f.Session)
		if err != nil {
			return nil, err
		}
		project = s.ProjectID
		if f.ProfileID == nil {
			profile = s.ProfileID
		}
	}
	out, err := c.h.d.Artifacts.Available(ctx, c.p, project, profile)
	if out == nil && err == nil {
		out = []events.AvailableSkill{}
	}
	return out, err
}
