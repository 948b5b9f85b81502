package acp

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
)

// Converter turns one turn's session/update notifications, permission
// requests and prompt response into engine outputs. It does no I/O: the same
// input always gives the same outputs (given Now), which the golden tests
// pin.
//
// ACP streams text as chunks without message boundaries, so the converter
// accumulates: each chunk goes out as a stream delta at once, and the block
// becomes one assistant (or reasoning) message when it ends, at a switch
// between text and thought, a tool call, a new agent message id, or the end
// of the turn. A tool call becomes one tool_use message, emitted once its
// input is known (some agents first announce a call with an empty or
// partial rawInput): at its permission request, when it starts running or
// completes, or before anything that must follow it. Its completion becomes
// a synthetic user message carrying the tool_result.
//
// A Converter serves one turn and is not safe for concurrent use.
type Converter struct {
	// Profile reads the agent's tool calls.
	Profile *Profile
	// SessionID is the ACP session of the turn; every output carries it.
	SessionID string
	// Model is the model messages name.
	Model string
	// Base prefixes message ids: Base:0, Base:1, …
	Base string
	// MCPServers are the names of the session's MCP servers.
	MCPServers []string
	// MCPTools, when set, names the servers among MCPServers that list a
	// tool: asked only for a bare tool name several servers could have.
	MCPTools func(tool string) []string
	// Now stamps messages; nil means time.Now.
	Now func() time.Time
	// CostBase is the session's running cost before the turn (usage_update
	// reports a session total).
	CostBase float64

	n       int
	stream  *openStream
	calls   map[string]*callState
	order   []string // calls not yet emitted, in order of first sight
	plans   int
	results int // tool results emitted: model calls = results + 1
	usage   events.TokenUsage
	cost    *float64
	failure string // the agent's own error notice, if it sent one
}

type openStream struct {
	reasoning bool
	messageID string // the agent's message id, if it sends one
	text      strings.Builder
}

type callState struct {
	call
	name, raw string // canonical and raw names, once emitted
	emitted   bool
	done      bool // its result went out
	dropped   bool // a harness tool
}

// Update converts one session/update.
func (c *Converter) Update(u Update) []events.Output {
	switch u.SessionUpdate {
	case "agent_message_chunk", "agent_thought_chunk":
		return c.chunk(u)
	case "tool_call", "tool_call_update":
		return c.toolCall(u.ToolCall, u.Meta)
	case "plan":
		return c.plan(u.Entries)
	case "usage_update":
		if u.Cost != nil && (u.Cost.Currency == "" || strings.EqualFold(u.Cost.Currency, "USD")) {
			v := u.Cost.Amount
			c.cost = &v
		}
	}
	// user_message_chunk (history replay), available_commands_update,
	// current_mode_update, config_option_update and session_info_update
	// carry nothing for the transcript; the turn loop records what it needs.
	return nil
}

// Known reports whether the converter or the turn loop reads updates of
// kind; others are logged once and ignored.
func Known(kind string) bool {
	switch kind {
	case "agent_message_chunk", "agent_thought_chunk", "user_message_chunk", "tool_call", "tool_call_update", "plan",
		"usage_update", "available_commands_update", "current_mode_update", "config_option_update", "session_info_update":
		return true
	}
	return false
}

func (c *Converter) chunk(u Update) []events.Output {
	reasoning := u.SessionUpdate == "agent_thought_chunk"
	c.addMetaUsage(u.Meta)
	var b ContentBlock
	if json.Unmarshal(u.Content, &b) != nil || b.Type != "text" || b.Text == "" {
		return nil // an empty chunk (Qwen's usage carrier) or non-text content
	}
	if c.stream == nil && !reasoning && c.Profile != nil && c.Profile.Notice != nil {
		if level, msg, ok := c.Profile.Notice(b.Text); ok {
			if level == events.LevelError {
				c.failure = msg
			}
			return []events.Output{events.Notification{SessionID: c.SessionID, Level: level, Title: c.Profile.Name, Message: msg}}
		}
	}
	var out []events.Output
	if s := c.stream; s != nil && (s.reasoning != reasoning || u.MessageID != "" && s.messageID != "" && u.MessageID != s.messageID) {
		out = append(out, c.closeStream("")...)
	}
	if c.stream == nil {
		out = append(out, c.emitPending()...)
		c.stream = &openStream{reasoning: reasoning, messageID: u.MessageID}
		out = append(out, events.StreamEvent{Event: events.StreamStart, SessionID: c.SessionID, Reasoning: reasoning})
	}
	c.stream.text.WriteString(b.Text)
	return append(out, events.StreamEvent{Event: events.StreamDelta, SessionID: c.SessionID, Text: b.Text, Reasoning: reasoning})
}

// closeStream stops the open stream and emits its block as one message;
// stop is the text message's stop reason.
func (c *Converter) closeStream(stop events.StopReason) []events.Output {
	s := c.stream
	if s == nil {
		return nil
	}
	c.stream = nil
	out := []events.Output{events.StreamEvent{Event: events.StreamStop, SessionID: c.SessionID, Reasoning: s.reasoning}}
	text := s.text.String()
	if strings.TrimSpace(text) == "" {
		return out
	}
	if s.reasoning {
		return append(out, events.ReasoningMessage{MessageBase: c.base(), Text: text})
	}
	return append(out, events.AssistantMessage{MessageBase: c.base(), StopReason: stop,
		Content: []events.Block{events.TextBlock{Text: text}}})
}

// state returns the call's state, creating it at first sight.
func (c *Converter) state(id string) *callState {
	if c.calls == nil {
		c.calls = map[string]*callState{}
	}
	s := c.calls[id]
	if s == nil {
		s = &callState{call: call{ID: id}}
		c.calls[id] = s
		c.order = append(c.order, id)
	}
	return s
}

// plan turns a plan into a TodoWrite call with its (immediate) result.
func (c *Converter) plan(entries []PlanEntry) []events.Output {
	out := append(c.closeStream(""), c.emitPending()...)
	todos := make([]events.Todo, 0, len(entries))
	for _, e := range entries {
		status := e.Status
		switch status {
		case "in_progress", "completed", "pending":
		case "inProgress":
			status = events.TodoInProgress
		case "cancelled":
			status = events.TodoCompleted
		default:
			status = events.TodoPending
		}
		todos = append(todos, events.Todo{Content: e.Content, Status: status, ActiveForm: e.Content})
	}
	c.plans++
	id := c.Base + ":plan:" + strconv.Itoa(c.plans)
	input, _ := json.Marshal(events.TodoWriteInput{Todos: todos})
	return append(out,
		events.AssistantMessage{MessageBase: c.base(), StopReason: events.StopToolUse,
			Content: []events.Block{events.ToolUseBlock{ID: id, Name: string(events.ToolTodoWrite), Input: input}}},
		events.UserMessage{MessageBase: c.base(), Synthetic: true,
			Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: "Plan updated"}}})
}

func (c *Converter) base() events.MessageBase {
	id := c.Base + ":" + strconv.Itoa(c.n)
	c.n++
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	typ, provider := events.EngineACP, ""
	if c.Profile != nil {
		typ, provider = c.Profile.Type, c.Profile.Provider
	}
	return events.MessageBase{CreatedAt: now().UTC(), MessageID: id, SessionID: c.SessionID,
		Engine: events.MessageEngine{Type: typ, Provider: provider, Model: events.ModelRef{ID: c.Model}}}
}
