// Package scripted is the built-in engine that replays scenario files: text
// and reasoning deltas with pacing, tool calls with results, a sub-agent with
// tagged children, questions and permission prompts that block until
// answered, rate limits, notifications, compactions and provider errors. It
// goes through the same Engine interface as every real adapter, so the worker,
// streammgr and clients are tested and demoed without any model account, and
// it is the behaviour every real adapter is measured against.
package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Version is reported as the engine's version.
const Version = "1.0.0"

// Engine plays scenarios. The model id picks one: "scripted/<name>".
type Engine struct {
	lib *Library
}

var _ engine.Engine = (*Engine)(nil)

// New returns an engine playing the scenarios of lib.
func New(lib *Library) *Engine { return &Engine{lib: lib} }

// Type reports events.EngineScripted.
func (e *Engine) Type() events.EngineType { return events.EngineScripted }

// Version reports the scenario player's version.
func (e *Engine) Version(context.Context) (string, error) { return Version, nil }

// Run plays the scenario the request's model names. On interrupt it stops
// streaming, saves what it had as an interrupted message and ends the turn
// with a result; on cancel it stops at once and returns the cause.
func (e *Engine) Run(ctx context.Context, req engine.Request, emit engine.Emit) error {
	sc, err := e.lib.Resolve(req.Model)
	if err != nil {
		return &engine.Error{Kind: events.KindModelUnavailable, Msg: err.Error(), Err: err}
	}
	p := &player{ctx: ctx, req: req, emit: emit, session: "scripted-" + uuid.NewString()}
	p.engine = events.MessageEngine{Type: events.EngineScripted, Provider: "clopen",
		Model: events.ModelRef{ID: "scripted/" + sc.Name, Name: sc.Name}}
	if err := p.out(events.SystemInit{SessionID: p.session, Model: "scripted/" + sc.Name,
		Engine: events.EngineScripted, Tools: []string{"Bash", "Read", "Glob", "Agent", "AskUserQuestion"},
		MCPServers: []events.MCPServer{}}); err != nil {
		return err
	}
	for _, st := range sc.Steps {
		if err := p.step(st, ""); err != nil {
			return p.stopped(err)
		}
	}
	usage := events.TokenUsage{InputTokens: int64(len(req.PromptText())/4 + 100), OutputTokens: int64(p.chars/4 + 1)}
	if p.calls > 0 {
		usage = p.spent
	}
	res := events.Result{Subtype: events.ResultSuccess, SessionID: p.session, NumTurns: max(p.calls, 1), Usage: usage,
		TotalCostUSD: p.cost, StopReason: "end_turn"}
	if r := sc.Result; r != nil {
		if r.Usage != nil {
			res.Usage = *r.Usage
		}
		res.TotalCostUSD, res.NumTurns = r.TotalCostUSD, max(r.NumTurns, 1)
	}
	return p.out(res)
}

// player is one playing of a scenario: all the state of one run.
type player struct {
	ctx     context.Context
	req     engine.Request
	emit    engine.Emit
	engine  events.MessageEngine
	session string
	chars   int
	// spent, cost and calls are what the usage steps reported so far.
	spent events.TokenUsage
	cost  float64
	calls int

	streaming bool   // a stream_event start was sent and not yet stopped
	reasoning bool   // the open stream is reasoning
	partial   string // text streamed so far in the open stream
}

// errProvider ends a turn the way a failing provider would.
type errProvider struct{ step *ErrorStep }

func (e errProvider) Error() string { return e.step.Message }

func (p *player) step(st Step, parent string) error {
	switch {
	case st.Text != nil:
		return p.stream(*st.Text, false, parent)
	case st.Reasoning != nil:
		return p.stream(*st.Reasoning, true, parent)
	case st.Tool != nil:
		return p.tool(*st.Tool, parent, false)
	case st.Permission != nil:
		return p.tool(*st.Permission, parent, true)
	case st.Agent != nil:
		return p.agent(*st.Agent)
	case st.Ask != nil:
		return p.ask(*st.Ask)
	case st.RateLimit != nil:
		r := st.RateLimit
		rl := events.RateLimit{SessionID: p.session, Status: events.RateLimitStatus(r.Status), Utilization: r.Utilization}
		if r.RateLimitType != "" {
			rl.RateLimitType = events.RateLimitType(r.RateLimitType)
		}
		if r.ResetsInSecs > 0 {
			rl.ResetsAt = time.Now().Unix() + r.ResetsInSecs
		}
		return p.out(rl)
	case st.Notification != nil:
		n := st.Notification
		return p.out(events.Notification{SessionID: p.session, Level: events.NotificationLevel(n.Level), Title: n.Title, Message: n.Message})
	case st.Compact != nil:
		return p.out(events.CompactBoundary{MessageBase: p.base(""), Trigger: events.CompactTrigger(st.Compact.Trigger), PreTokens: st.Compact.PreTokens})
	case st.Error != nil:
		return errProvider{st.Error}
	case st.Sleep != 0:
		return p.wait(time.Duration(st.Sleep))
	case st.Report != nil:
		return p.report(*st.Report)
	case st.Usage != nil:
		p.spent, p.cost, p.calls = p.spent.Add(st.Usage.TokenUsage), p.cost+st.Usage.CostUSD, p.calls+1
		return p.out(events.RunUsage{Source: events.UsageFromEngine, Usage: p.spent, CostUSD: p.cost})
	}
	return fmt.Errorf("empty scenario step")
}

// stream sends text as deltas (top level only) and then the whole message.
func (p *player) stream(t TextStep, reasoning bool, parent string) error {
	text := strings.Repeat(t.Text, max(t.Repeat, 1))
	chunk := t.Chunk
	if chunk <= 0 {
		chunk = 8
	}
	if parent == "" { // sub-agent text is never streamed: deltas carry no parent
		p.streaming, p.reasoning, p.partial = true, reasoning, ""
		if err := p.out(events.StreamEvent{Event: events.StreamStart, SessionID: p.session, Reasoning: reasoning}); err != nil {
			return err
		}
		// Deltas are paced on a schedule: each is due at began+i*delay, and a
		// tick emits every delta that is due, so fast paces (under a
		// millisecond) cost one timer per tick, not one per delta.
		began, delay := time.Now(), time.Duration(t.Delay)
		for i, n := 0, 0; i < len(text); i, n = i+chunk, n+1 {
			if delay > 0 {
				if wait := time.Until(began.Add(time.Duration(n) * delay)); wait > time.Millisecond {
					if err := p.wait(wait); err != nil {
						return err
					}
				}
			}
			if p.ctx.Err() != nil {
				return context.Cause(p.ctx)
			}
			piece := text[i:min(i+chunk, len(text))]
			if err := p.out(events.StreamEvent{Event: events.StreamDelta, SessionID: p.session, Text: piece, Reasoning: reasoning}); err != nil {
				return err
			}
			p.partial += piece
		}
		p.streaming = false
		if err := p.out(events.StreamEvent{Event: events.StreamStop, SessionID: p.session, Reasoning: reasoning}); err != nil {
			return err
		}
	}
	p.chars += len(text)
	if reasoning {
		return p.out(events.ReasoningMessage{MessageBase: p.base(parent), Text: text})
	}
	return p.out(events.AssistantMessage{MessageBase: p.base(parent), Content: []events.Block{events.TextBlock{Text: text}}})
}

// tool emits the call, checks permission, waits while it "runs", then emits
// its result as a synthetic user message whose own parent is the sub-agent's
// (never the call it answers: that id lives in the tool_result block).
func (p *player) tool(t ToolStep, parent string, ask bool) error {
	id := "toolu_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	input := t.Input
	if len(input) == 0 {
		input = json.RawMessage(`{}`)
	}
	name := events.ToCanonicalToolName(t.Name)
	if err := p.out(events.AssistantMessage{MessageBase: p.base(parent), StopReason: events.StopToolUse,
		Content: []events.Block{events.ToolUseBlock{ID: id, Name: name, Input: input}}}); err != nil {
		return err
	}
	d, err := p.req.Interaction.Permit(p.ctx, engine.PermissionRequest{ToolUseID: id, Tool: name, Input: input, Ask: ask})
	if err != nil {
		return err
	}
	result, isError := t.Result, t.IsError
	if !d.Allow {
		result, isError = "Permission denied: "+d.Message, true
	} else if err := p.wait(time.Duration(t.Delay)); err != nil {
		return err
	}
	return p.out(events.UserMessage{MessageBase: p.base(parent), Synthetic: true,
		Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: result, IsError: isError}}})
}

func (p *player) agent(a AgentStep) error {
	id := "toolu_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	input, _ := json.Marshal(events.AgentInput{Prompt: a.Prompt, Description: a.Description, SubagentType: cmpOr(a.SubagentType, "general-purpose")})
	if err := p.out(events.AssistantMessage{MessageBase: p.base(""), StopReason: events.StopToolUse,
		Content: []events.Block{events.ToolUseBlock{ID: id, Name: string(events.ToolAgent), Input: input}}}); err != nil {
		return err
	}
	for _, st := range a.Steps {
		if err := p.step(st, id); err != nil {
			return err
		}
	}
	return p.out(events.UserMessage{MessageBase: p.base(""), Synthetic: true,
		Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: a.Result}}})
}

func (p *player) ask(a AskStep) error {
	id := "toolu_" + strings.ReplaceAll(uuid.NewString(), "-", "")[:20]
	q := a.AskUserQuestionInput
	input, _ := json.Marshal(q)
	if err := p.out(events.AssistantMessage{MessageBase: p.base(""), StopReason: events.StopToolUse,
		Content: []events.Block{events.ToolUseBlock{ID: id, Name: string(events.ToolAskUserQuestion), Input: input}}}); err != nil {
		return err
	}
	if err := p.wait(time.Duration(a.Delay)); err != nil {
		return err
	}
	answers, err := p.req.Interaction.AskUser(p.ctx, id, q)
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("User has answered your questions:")
	for _, qq := range q.Questions {
		fmt.Fprintf(&b, " %q=%q.", qq.Question, answers[qq.Question])
	}
	return p.out(events.UserMessage{MessageBase: p.base(""), Synthetic: true,
		Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: b.String()}}})
}

// report tells what the run was configured with (see ReportStep).
func (p *player) report(r ReportStep) error {
	var b strings.Builder
	b.WriteString("prompt:\n" + p.req.PromptText())
	for _, f := range r.Files {
		content := "(missing)"
		if p.req.ConfigDir == "" {
			content = "(no config dir)"
		} else if data, err := os.ReadFile(filepath.Join(p.req.ConfigDir, f)); err == nil {
			content = string(data)
		}
		fmt.Fprintf(&b, "\n\n--- %s ---\n%s", f, content)
	}
	return p.out(events.Notification{SessionID: p.session, Level: events.LevelInfo, Title: "Artifacts", Message: b.String()})
}

// wait pauses for d, returning early with the cancel cause.
func (p *player) wait(d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-p.ctx.Done():
		return context.Cause(p.ctx)
	}
}

// stopped turns the error that ended the scenario into the end of the turn.
// An interrupt is a soft stop: close the open stream, keep the partial text as
// an interrupted message, end with a result. A provider error ends with a
// failed result carrying its message. Anything else (cancel) stops at once.
func (p *player) stopped(err error) error {
	var prov errProvider
	switch {
	case errors.Is(err, engine.ErrInterrupted):
		if p.streaming {
			_ = p.out(events.StreamEvent{Event: events.StreamStop, SessionID: p.session, Reasoning: p.reasoning})
			if p.partial != "" && !p.reasoning {
				_ = p.out(events.AssistantMessage{MessageBase: p.base(""), StopReason: events.StopInterrupted,
					Content: []events.Block{events.TextBlock{Text: p.partial}}})
			}
		}
		return p.out(events.Result{Subtype: events.ResultErrorDuringExecution, SessionID: p.session,
			Errors: []string{"interrupted by user"}})
	case errors.As(err, &prov):
		if p.streaming {
			_ = p.out(events.StreamEvent{Event: events.StreamStop, SessionID: p.session, Reasoning: p.reasoning})
		}
		_ = p.out(events.Result{Subtype: events.ResultErrorDuringExecution, SessionID: p.session, Errors: []string{prov.step.Message}})
		return &engine.Error{Kind: cmpOr(prov.step.Kind, events.KindProvider), Msg: prov.step.Message}
	}
	return err
}

func (p *player) out(o events.Output) error { return p.emit(o) }

func (p *player) base(parent string) events.MessageBase {
	b := events.MessageBase{CreatedAt: time.Now().UTC(), MessageID: uuid.NewString(), SessionID: p.session, Engine: p.engine}
	if parent != "" {
		b.Parent.ToolUseID = parent
	}
	return b
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
