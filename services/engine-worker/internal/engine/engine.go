// Package engine is the contract between the worker and every engine adapter:
// the Engine interface, the request a turn runs with, the interaction surface
// for questions and permission prompts, and error classification.
//
// One output path: Run's emit function is the only way an adapter produces
// events. State lives on the run: everything a turn needs (context, process,
// engine session, parked questions) belongs to that one Run call, so stopping
// one run never touches another.
package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"clopen.dev/pkg/events"
)

// Engine drives one kind of agent. Implementations are safe for concurrent
// Run calls; each call is one turn and returns when the turn has ended.
type Engine interface {
	// Type is the engine type this adapter serves.
	Type() events.EngineType
	// Run runs one turn. It emits the engine's outputs in order through emit,
	// ending a normal turn with a events.Result, and returns nil when the
	// turn ended (successfully or with an error the result already reports).
	// It returns an error when the turn could not run or broke off without a
	// result. When ctx is cancelled, context.Cause(ctx) says how to stop:
	// ErrInterrupted asks for a soft stop through the engine's own protocol
	// (the engine session must stay resumable), anything else for a hard stop.
	Run(ctx context.Context, req Request, emit Emit) error
}

// Emit publishes one output of a run. It blocks when the publisher is behind
// and fails once the run may no longer publish (lease lost, run ended).
type Emit func(events.Output) error

// All emits outs in order, stopping at the first error.
func (emit Emit) All(outs []events.Output) error {
	for _, o := range outs {
		if err := emit(o); err != nil {
			return err
		}
	}
	return nil
}

// Request is one turn.
type Request struct {
	Tenant    string
	RunID     string
	SessionID string // the chat session
	ProjectID string
	// Workspace is the directory the agent works in.
	Workspace string
	// ConfigDir is the engine's isolated config dir for this chat session
	// (CODEX_HOME, pi's agent dir...), where the worker placed the run's
	// artifacts through the adapter's layout; the session's turns run one
	// at a time, so no other run's artifacts replace them while the turn
	// reads them. Never the user's repo.
	ConfigDir string
	// Prompt is the engine prompt (already expanded, with the artifacts
	// preamble of prompt-scoped engines as its first text block).
	Prompt    []events.Block
	Model     string
	Provider  string
	AccountID string
	Effort    string
	// ResumeSessionID continues that engine session (forked); empty starts fresh.
	ResumeSessionID string
	// Ephemeral marks a turn nobody continues (a structured generation):
	// the adapter keeps no warm process for it, and no engine session where
	// the engine can run without one.
	Ephemeral bool
	// MCPServers are extra MCP servers the agent may use this turn.
	MCPServers []MCPServer
	// Permissions are the run's policy (events.PermissionRules.Allows
	// decides a call). Interaction.Permit applies it to every call that
	// reaches it; an engine that can also refuse tools up front (a
	// command-line deny list) should, because some calls never ask.
	Permissions events.PermissionRules
	// Interaction parks questions and permission prompts; never nil.
	Interaction Interaction
}

// MCPServer is a remote MCP server reachable over streamable HTTP.
type MCPServer struct {
	Name    string
	URL     string
	Headers map[string]string
	// Tools, when set, lists the names of the tools the server offers the
	// turn, as its agent sees them. An adapter whose agent names a call by
	// its bare tool name asks it to tell servers apart.
	Tools func(ctx context.Context) ([]string, error)
}

// PromptText joins the text blocks of the prompt.
func (r Request) PromptText() string {
	var s string
	for _, b := range r.Prompt {
		if t, ok := b.(events.TextBlock); ok {
			if s != "" {
				s += "\n\n"
			}
			s += t.Text
		}
	}
	return s
}

// Interaction is how an adapter asks the user something and waits for the
// answer. Calls block until answered or ctx ends; the adapter emits the
// tool_use message that asks BEFORE calling, so clients can show it.
type Interaction interface {
	// AskUser parks an AskUserQuestion call and returns the answers
	// (question text -> chosen label).
	AskUser(ctx context.Context, toolUseID string, input events.AskUserQuestionInput) (map[string]string, error)
	// Permit decides whether a tool call may run: by the run's permission
	// policy, or by asking the user when the policy says so.
	Permit(ctx context.Context, p PermissionRequest) (Decision, error)
}

// PermissionRequest describes a tool call an engine wants to make.
type PermissionRequest struct {
	ToolUseID string
	Tool      string          // canonical tool name
	Input     json.RawMessage // canonical input
	// Ask forces asking the user unless the policy denies outright (scripted
	// scenarios and engines that only ask for risky calls set it).
	Ask bool
}

// Decision answers a PermissionRequest.
type Decision struct {
	Allow   bool
	Message string // shown to the model when denied
	// ByUser is true when a person decided, false when the policy did.
	ByUser bool
}

// ErrInterrupted is the cancel cause of a soft stop (interrupt).
var ErrInterrupted = errors.New("interrupted by user")

// ErrCancelled is the cancel cause of a hard stop (cancel).
var ErrCancelled = errors.New("cancelled by user")

// ErrNoAnswer is returned by Interaction calls whose run ended before an answer.
var ErrNoAnswer = errors.New("run ended before the question was answered")

// Error is a classified adapter failure. The kind travels on the bus so
// clients can react (sign in, pick another model, retry later).
type Error struct {
	Kind events.ErrorKind
	Msg  string
	Err  error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Msg == "" {
		return e.Err.Error()
	}
	return e.Msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns a classified error.
func Errorf(kind events.ErrorKind, format string, args ...any) error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Msg: err.Error(), Err: errors.Unwrap(err)}
}

// KindOf returns the kind of err, events.KindInternal when unclassified.
func KindOf(err error) events.ErrorKind {
	var e *Error
	if errors.As(err, &e) && e.Kind != "" {
		return e.Kind
	}
	switch {
	case errors.Is(err, ErrInterrupted):
		return events.KindInterrupted
	case errors.Is(err, ErrCancelled), errors.Is(err, context.Canceled):
		return events.KindCancelled
	case errors.Is(err, context.DeadlineExceeded):
		return events.KindTimeout
	}
	return events.KindInternal
}

// Versioned is implemented by engines that can report the version of the
// agent they drive; workers advertise it.
type Versioned interface {
	Version(ctx context.Context) (string, error)
}

// Disposer is implemented by engines that hold resources beyond a turn
// (warm processes): Dispose stops every run and releases everything.
type Disposer interface {
	Dispose(ctx context.Context) error
}

// LastLine returns the last non-blank line of s (a CLI's stderr), cut to
// 500 bytes: what an error message quotes of why a CLI failed.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			if len(l) > 500 {
				l = strings.ToValidUTF8(l[:500], "") + "…"
			}
			return l
		}
	}
	return ""
}

// ContainsAny reports whether s contains any of subs; the adapters classify
// provider errors by their messages with it.
func ContainsAny(s string, subs ...string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
