// Package enginetest is the conformance suite every engine adapter passes on
// its real CLI, and doubles for the worker's tests.
//
// Run drives an adapter through the scenarios of the contract (text,
// thinking, a tool with a real effect, permissions, questions, interrupt,
// cancel, resume, fork, provider errors, usage) against fakellm, inside a
// Sandbox: a loopback-only network namespace plus a PID namespace, with a
// fresh state dir per scenario. Nothing reaches past loopback, and nothing
// the agent starts outlives it.
//
// An adapter's test package calls Main from TestMain (the sandbox re-executes
// the test binary to serve fakellm) and Run from a test:
//
//	func TestMain(m *testing.M) { enginetest.Main(m) }
//
//	func TestConformance(t *testing.T) {
//		enginetest.Run(t, enginetest.Harness{New: newEngine, Model: "claude-opus-5-5"},
//			enginetest.Features{Thinking: true, Permissions: true, ...})
//	}
package enginetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Harness builds the adapter under test.
type Harness struct {
	// Type is the engine type the adapter reports.
	Type events.EngineType
	// New returns a fresh adapter for one scenario, running its CLI through
	// env.Wrap against env.BaseURL and keeping its state under env.StateDir.
	// It registers its own cleanup (Dispose) with t.
	New func(t *testing.T, env Env) engine.Engine
	// Model is the model turns ask for.
	Model string
	// Confined runs every scenario's CLI in the worker's agent sandbox
	// (Env.Sandbox, bubblewrap) instead of through Env.Wrap, as the worker
	// runs it.
	Confined bool
	// TurnTimeout bounds each turn; 0 means 60 s. An agent that retries a
	// failed model call on its own schedule (Qwen Code: 7 attempts over
	// about 75 s, not configurable) needs longer to report the failure.
	TurnTimeout time.Duration
}

// Env is what a scenario gives the adapter.
type Env struct {
	BaseURL  string   // fakellm, reachable only inside the sandbox
	Wrap     []string // runs a command inside the sandbox
	StateDir string   // fresh, empty: the agent's HOME lives below it
	// Sandbox, when set (Harness.Confined), confines every process of the
	// adapter; Wrap is then empty.
	Sandbox *engine.Sandboxing
}

// Features says what an engine's protocol can do; a scenario whose feature
// is false is not run (the adapter's test documents why). The scenarios
// every engine must pass (text, a tool with a real effect, cancel, provider
// error) have no flag.
type Features struct {
	Thinking    bool // reasoning streams and messages
	Permissions bool // tool calls go through Interaction.Permit, and a deny stops them
	AskUser     bool // AskUserQuestion through Interaction.AskUser
	Interrupt   bool // a soft stop that ends the turn with a result and keeps the session usable
	Resume      bool // a turn continues an earlier engine session, history included
	Fork        bool // every resume reports a new session and leaves the resumed one as it was
	Cost        bool // results carry totalCostUsd
	MCP         bool // Request.MCPServers are connected and their tools called (mcp__<server>__<tool>)
	// DenyUpFront: Request.Permissions.Deny is enforced by the engine itself, even for
	// tools that would never ask (the model is not offered them).
	DenyUpFront bool

	// OpaqueServerErrors marks a limitation, not a capability: the CLI
	// replaces the provider's message of an HTTP 500 with its own text
	// (Codex does), so provider_error checks the error's kind and that the
	// result fails, not that the provider's words reach the user.
	OpaqueServerErrors bool
	// SilentRetries marks a limitation: the CLI retries a failed model
	// call and says so nowhere the adapter can read (not over its
	// protocol, not in its logs): Cline, on its own schedule with no limit
	// to set, so rate_limited and slow_provider_error, which want a
	// bounded turn and notices while it retries, are not run.
	SilentRetries bool
	// RetriesWithoutStatus marks a lesser limitation: the CLI logs each
	// failed model call but not its HTTP status (OpenCode), so the retry
	// scenarios want the bounded turn and a warning while it retries, and
	// a provider failure, not the status in them.
	RetriesWithoutStatus bool
	// Catalog: the engine is an engine.Cataloger whose catalog holds
	// Harness.Model.
	Catalog bool
	// Structured: engine.Generate gives a document that fits the schema
	// (natively or through a plain turn), and the generic fallback through
	// Run reads fenced answers and refuses truncated ones.
	Structured bool
}

// Run runs every scenario the features allow, each as a subtest, in one
// sandbox. It skips (locally) or fails (CI=true) without root.
func Run(t *testing.T, h Harness, f Features) {
	sb := NewSandbox(t, time.Minute)
	s := &suite{h: h, f: f, sb: sb}
	if h.Confined {
		s.confine = sb.Confine(t)
	}
	scenarios := []struct {
		name string
		on   bool
		run  func(*testing.T)
	}{
		{"text", true, s.text},
		{"long_stream", true, s.long},
		{"thinking", f.Thinking, s.thinking},
		{"tool", true, s.tool},
		{"permission_denied", f.Permissions, s.denied},
		{"denied_up_front", f.DenyUpFront, s.deniedUpFront},
		{"ask_user", f.AskUser, s.askUser},
		{"ask_user_at_once", f.AskUser, s.askUserAtOnce},
		{"mcp_tool", f.MCP, s.mcpTool},
		{"interrupt", f.Interrupt, s.interrupt},
		{"cancel", true, s.cancel},
		{"resume_and_fork", f.Resume, s.resumeAndFork},
		{"resume_after_restart", f.Resume, s.resumeAfterRestart},
		{"provider_error", true, s.providerError},
		{"rate_limited", !f.SilentRetries, s.rateLimited},
		{"slow_provider_error", !f.SilentRetries, s.slowProviderError},
		{"usage_and_cost", true, s.usage},
		{"catalog", f.Catalog, s.catalog},
		{"structured", f.Structured, s.structured},
	}
	for _, sc := range scenarios {
		if !sc.on {
			t.Logf("scenario %s: not supported by %s (Features)", sc.name, h.Type)
			continue
		}
		t.Run(sc.name, sc.run)
	}
}

type suite struct {
	h       Harness
	f       Features
	sb      *Sandbox
	confine *engine.Sandboxing // the agents' sandbox when the harness is Confined
}

// env is what a scenario's adapter gets: the sandbox's Wrap, or its
// confinement when the harness is Confined.
func (s *suite) env(t *testing.T) Env {
	if s.confine != nil {
		return Env{BaseURL: s.sb.BaseURL, StateDir: t.TempDir(), Sandbox: s.confine}
	}
	return Env{BaseURL: s.sb.BaseURL, Wrap: s.sb.Wrap, StateDir: t.TempDir()}
}

// chat is one scenario's adapter, workspace and chat session.
type chat struct {
	s         *suite
	eng       engine.Engine
	workspace string
	session   string
	mcp       []engine.MCPServer // offered on every turn
	denied    []string           // the policy's deny list on every turn
}

func (s *suite) newChat(t *testing.T) *chat {
	t.Helper()
	eng := s.h.New(t, s.env(t))
	return &chat{s: s, eng: eng, workspace: t.TempDir(), session: uuid.NewString()}
}

// turn runs one turn to its end and checks its structure.
func (c *chat) turn(t *testing.T, prompt, resume string, rec *Recorder) (events.Result, error) {
	t.Helper()
	return c.turnCtx(t, context.Background(), prompt, resume, rec)
}

func (c *chat) turnCtx(t *testing.T, ctx context.Context, prompt, resume string, rec *Recorder) (events.Result, error) {
	t.Helper()
	return c.run(t, ctx, c.request(prompt, resume, rec), rec)
}

// turnOn runs a turn on model instead of the harness's.
func (c *chat) turnOn(t *testing.T, model, prompt string, rec *Recorder) (events.Result, error) {
	t.Helper()
	req := c.request(prompt, "", rec)
	req.Model = model
	return c.run(t, context.Background(), req, rec)
}

func (c *chat) run(t *testing.T, ctx context.Context, req engine.Request, rec *Recorder) (events.Result, error) {
	t.Helper()
	timeout := c.s.h.TurnTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err := c.eng.Run(ctx, req, rec.Emit)
	outs := rec.Outputs()
	for _, e := range CheckTurn(c.s.h.Type, outs, !errors.Is(err, engine.ErrCancelled)) {
		t.Errorf("turn %q: %v", req.PromptText(), e)
	}
	if len(outs) == 0 {
		return events.Result{}, err
	}
	res, _ := outs[len(outs)-1].(events.Result)
	return res, err
}

func (c *chat) request(prompt, resume string, rec *Recorder) engine.Request {
	return engine.Request{Tenant: "tenant-1", RunID: uuid.NewString(), SessionID: c.session, ProjectID: "project-1",
		Workspace: c.workspace, Prompt: []events.Block{events.TextBlock{Text: prompt}}, Model: c.s.h.Model,
		ResumeSessionID: resume, Interaction: rec, MCPServers: c.mcp, Permissions: events.PermissionRules{Deny: c.denied}}
}
