package streammgr

import (
	"context"
	"regexp"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/streammgr/internal/store"
)

// turn is what the engine-prompt steps know about the turn being
// dispatched.
type turn struct {
	Tenant, User, Project, Session, Profile string
	Engine                                  events.EngineType
	ResumeSessionID                         string
}

func turnOf(r store.RunRow) turn {
	return turn{Tenant: r.Tenant, User: r.RequestedBy, Project: r.ProjectID, Session: r.SessionID, Profile: r.Profile,
		Engine: r.Engine, ResumeSessionID: r.ResumeSessionID}
}

// promptStep transforms the engine prompt. A step never fails the turn: what
// it cannot do it leaves undone (and logs), passing its input on.
type promptStep struct {
	name  string
	apply func(ctx context.Context, t turn, prompt []events.Block) []events.Block
}

// promptSteps is the one ordered pipeline from what the user typed to what
// the engine receives. Each step transforms the OUTPUT of the step before
// it, never the saved user message, so a later step (resume or handoff
// context, memory) keeps what an earlier one did (the original rebuilt the
// handoff from the raw message and lost the slash expansion).
func (m *Manager) promptSteps() []promptStep {
	return []promptStep{
		{"slash-skill", m.expandSlash},
		// Next: cross-engine handoff transcript, then memory context.
	}
}

// buildEnginePrompt runs the pipeline.
func (m *Manager) buildEnginePrompt(ctx context.Context, t turn, prompt []events.Block) []events.Block {
	for _, s := range m.promptSteps() {
		prompt = s.apply(ctx, t, prompt)
	}
	return prompt
}

// expandTimeout bounds the expansion request; it runs only for prompts that
// look like an invocation. A turn started into an idle session expands
// before its transaction locks the session; a queued turn, when the writer
// dispatches it, inside the writer's transaction.
const expandTimeout = 3 * time.Second

// mayInvoke is a cheap pre-check of the artifacts grammar (a first text
// block starting with /slug), so ordinary prompts cost no request.
var mayInvoke = regexp.MustCompile(`^[ \t]*/[a-z0-9]`)

// expandSlash asks artifacts to expand a /slug invocation. Streammgr never
// reads artifacts' tables: the skill, its profile rules and its body are
// the artifacts service's business.
func (m *Manager) expandSlash(ctx context.Context, t turn, prompt []events.Block) []events.Block {
	var first string
	for _, b := range prompt {
		if tb, ok := b.(events.TextBlock); ok {
			first = tb.Text
			break
		}
	}
	if !mayInvoke.MatchString(first) {
		return prompt
	}
	subject, err := events.ServiceSubject(events.ArtifactsService, events.OpExpand)
	if err != nil {
		return prompt
	}
	// Its own token, not its caller's: a queued prompt is expanded when
	// its turn comes, long after the caller's token expired.
	tok, err := m.bus.runToken(t, "", "")
	if err != nil {
		m.log.ErrorContext(ctx, "sign the expansion's token; sending the prompt as typed", "session_id", t.Session, "err", err)
		return prompt
	}
	cctx, cancel := context.WithTimeout(svc.WithToken(ctx, tok), expandTimeout)
	defer cancel()
	var reply events.ExpandReply
	err = svc.Call(cctx, m.nc, subject, events.ExpandRequest{Caller: events.Caller{TenantID: t.Tenant, UserID: t.User},
		ProjectID: t.Project, ProfileID: t.Profile, Engine: t.Engine, Prompt: prompt}, &reply)
	if err != nil {
		m.log.WarnContext(ctx, "slash skill not expanded; sending the prompt as typed", "session_id", t.Session, "err", err)
		return prompt
	}
	if reply.ExpandedSkill == "" || len(reply.Prompt) == 0 {
		return prompt
	}
	return reply.Prompt
}
