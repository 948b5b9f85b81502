package acp

import (
	"context"
	"fmt"
	"slices"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// opened is the session a turn prompts.
type opened struct {
	id   string
	resp NewSessionResponse
	// notice is set when the turn could not continue the session it
	// resumed (the agent cannot resume, or resuming failed).
	notice string
	how    string // new, live, fork, resume, load: for logs and tests
}

// openSession finds or makes the turn's session on a: the resumed one if
// it is open in this process (forked first when the agent can fork),
// else reopened through session/fork, session/resume or session/load,
// whichever the agent advertises; else a new one.
func (e *Engine) openSession(ctx context.Context, a *agent, req engine.Request, servers []map[string]any) (opened, error) {
	caps := a.info.AgentCapabilities
	base := map[string]any{"cwd": req.Workspace, "mcpServers": servers}
	with := func(id string) map[string]any {
		m := map[string]any{"sessionId": id}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	resume := req.ResumeSessionID
	if resume == "" {
		return e.newSession(ctx, a, base, "")
	}
	if a.sessions[resume] == nil && e.p.BeforeReopen != nil {
		if err := e.p.BeforeReopen(a.home, req.SessionID, req.Workspace, resume); err != nil {
			e.Log.Warn("acp: prepare to reopen the session", "session_id", resume, "err", err)
		}
	}
	var failures []string
	if has(caps.SessionCapabilities.Fork) {
		var r NewSessionResponse
		if err := a.p.conn.Call(ctx, "session/fork", with(resume), &r); err == nil && r.SessionID != "" {
			return opened{id: r.SessionID, resp: r, how: "fork"}, nil
		} else if err != nil {
			failures = append(failures, "session/fork: "+err.Error())
		}
	}
	if a.sessions[resume] != nil {
		return opened{id: resume, how: "live"}, nil
	}
	if has(caps.SessionCapabilities.Resume) {
		var r NewSessionResponse
		err := a.p.conn.Call(ctx, "session/resume", with(resume), &r)
		if err == nil {
			return opened{id: resume, resp: r, how: "resume"}, nil
		}
		failures = append(failures, "session/resume: "+err.Error())
	}
	if caps.LoadSession {
		var r NewSessionResponse
		err := a.p.conn.Call(ctx, "session/load", with(resume), &r)
		if err == nil {
			return opened{id: resume, resp: r, how: "load"}, nil
		}
		failures = append(failures, "session/load: "+err.Error())
	}
	notice := fmt.Sprintf("%s cannot resume its session %s, so this turn starts a new session that does not see the earlier messages (Clopen's handoff would be needed to replay them).",
		e.p.Name, resume)
	if len(failures) > 0 {
		notice = fmt.Sprintf("%s could not reopen its session %s (%s), so this turn starts a new session that does not see the earlier messages.",
			e.p.Name, resume, failures[len(failures)-1])
	}
	return e.newSession(ctx, a, base, notice)
}

func (e *Engine) newSession(ctx context.Context, a *agent, params map[string]any, notice string) (opened, error) {
	var r NewSessionResponse
	if err := a.p.conn.Call(ctx, "session/new", params, &r); err != nil {
		return opened{}, rpcError("session/new", err)
	}
	if r.SessionID == "" {
		return opened{}, &engine.Error{Kind: events.KindCrashed, Msg: e.p.Name + " answered session/new without a session id"}
	}
	return opened{id: r.SessionID, resp: r, notice: notice, how: "new"}, nil
}

// configure applies the turn's model and reasoning level where the session
// offers them (best effort: a config option of category model or
// thought_level whose values include the wanted one, else the unstable
// session/set_model; a reasoning level the option lacks is clamped to its
// current value). Agents that take the model on the command line or
// in their environment already run it; failures are logged, not fatal.
func (e *Engine) configure(ctx context.Context, a *agent, s opened, model, effort string) {
	set := func(category, want string) bool {
		for _, o := range s.resp.ConfigOptions {
			if o.Category != category || o.Type != "select" {
				continue
			}
			if fmt.Sprint(o.CurrentValue) == want {
				return true
			}
			for _, v := range o.Values() {
				if fmt.Sprint(v.Value) == want || v.Name == want {
					err := a.p.conn.Call(ctx, "session/set_config_option",
						map[string]any{"sessionId": s.id, "configId": o.ID, "value": v.Value}, nil)
					if err != nil {
						e.Log.Warn("acp: set config option", "option", o.ID, "err", err)
					}
					return true
				}
			}
		}
		return false
	}
	if model != "" && !set("model", model) && s.resp.Models != nil && s.resp.Models.CurrentModelID != model {
		if slices.ContainsFunc(s.resp.Models.AvailableModels, func(m ModelInfo) bool { return m.ModelID == model }) {
			if err := a.p.conn.Call(ctx, "session/set_model", map[string]any{"sessionId": s.id, "modelId": model}, nil); err != nil {
				e.Log.Warn("acp: set model", "model", model, "err", err)
			}
		}
	}
	// The agent's own reasoning levels: a level it does not offer is
	// clamped to its default, which the session already runs.
	if rc := ReasoningOf(s.resp.ConfigOptions); rc != nil && effort != "" {
		set("thought_level", engine.ClampEffort(events.EngineModel{Capabilities: events.ModelCapabilities{ReasoningControl: rc}}, effort))
	}
}

// mcpServers turns the request's MCP servers into session/new's list:
// http servers where the agent takes them; the names it could not take
// are reported failed in system_init.
func mcpServers(req []engine.MCPServer, caps MCPCapabilities) (list []map[string]any, status []events.MCPServer) {
	list = []map[string]any{}
	for _, s := range req {
		if !caps.HTTP {
			status = append(status, events.MCPServer{Name: s.Name, Status: events.MCPFailed})
			continue
		}
		headers := make([]map[string]string, 0, len(s.Headers))
		for k, v := range s.Headers {
			headers = append(headers, map[string]string{"name": k, "value": v})
		}
		slices.SortFunc(headers, func(a, b map[string]string) int {
			if a["name"] < b["name"] {
				return -1
			}
			return 1
		})
		list = append(list, map[string]any{"type": "http", "name": s.Name, "url": s.URL, "headers": headers})
		// ACP reports no per-server state: the agent accepted the server
		// with the session, which is what "connected" means here.
		status = append(status, events.MCPServer{Name: s.Name, Status: events.MCPConnected})
	}
	return list, status
}

// promptBlocks is the prompt as ACP content: text always; images when the
// agent takes them; documents as embedded resources when it takes those.
func promptBlocks(req engine.Request, caps PromptCapabilities) []map[string]any {
	var out []map[string]any
	for i, b := range req.Prompt {
		switch b := b.(type) {
		case events.TextBlock:
			out = append(out, map[string]any{"type": "text", "text": b.Text})
		case events.ImageBlock:
			if caps.Image {
				out = append(out, map[string]any{"type": "image", "mimeType": b.MediaType, "data": b.Data})
			} else {
				out = append(out, map[string]any{"type": "text", "text": "[an image the agent cannot read was left out]"})
			}
		case events.DocumentBlock:
			if caps.EmbeddedContext {
				out = append(out, map[string]any{"type": "resource", "resource": map[string]any{
					"uri": fmt.Sprintf("clopen://document/%d", i), "mimeType": b.MediaType, "blob": b.Data}})
			} else {
				out = append(out, map[string]any{"type": "text", "text": "[a document the agent cannot read was left out]"})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"type": "text", "text": req.PromptText()})
	}
	return out
}
