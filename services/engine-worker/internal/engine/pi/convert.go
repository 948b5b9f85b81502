package pi

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// interruptedText is the error of an interrupted turn's result.
const interruptedText = "Interrupted by user"

// Converter turns the events of one prompt into engine outputs. It does no
// I/O: the same events always give the same outputs (given Now), which the
// golden tests pin. Deltas stream live; the messages persisted are taken
// from each message_end (so an aborted message keeps what was streamed),
// one output per content block, each with its message's usage. Tool
// results come from tool_execution_end.
//
// A Converter serves one turn and is not safe for concurrent use.
type Converter struct {
	// Model and Provider are what messages carry.
	Model, Provider string
	// MCPServers are the MCP servers of the turn, as system_init reports them.
	MCPServers []events.MCPServer
	// Now stamps messages; nil means time.Now.
	Now func() time.Time

	session  string
	initSent bool
	stream   *openStream
	msgs     int // assistant messages so far, for ids
	emitted  map[string]bool
	answered map[string]bool
	parts    map[string]int

	usage     events.TokenUsage
	cost      float64
	calls     int
	lastError string
	aborted   bool
	ended     bool
	out       []events.Output
}

type openStream struct {
	index     int
	reasoning bool
}

// SetSession names the engine session (pi's session id) of the turn.
func (c *Converter) SetSession(id string) { c.session = id }

// Failing reports whether the turn's last model call failed, so pi may
// retry it after agent_end.
func (c *Converter) Failing() bool { return c.lastError != "" && !c.aborted }

// Ended reports whether agent_end has been converted.
func (c *Converter) Ended() bool { return c.ended }

// Convert returns the outputs of one event, possibly none.
func (c *Converter) Convert(ev Event) []events.Output {
	switch ev.Type {
	case "message_update":
		if ae := ev.AssistantMessageEvent; ae != nil {
			c.delta(*ae)
		}
	case "message_end":
		if m, ok := ev.message(); ok && m.Role == "assistant" {
			c.assistant(m)
		}
	case "tool_execution_start":
		c.toolUse(ev.ToolCallID, ev.ToolName, ev.Args)
	case "tool_execution_end":
		var r ToolResult
		_ = json.Unmarshal(ev.Result, &r)
		c.ToolResult(ev.ToolCallID, text(r.Content), ev.IsError)
	case "compaction_end":
		var r compaction
		if json.Unmarshal(ev.Result, &r) == nil && len(ev.Result) > 0 && string(ev.Result) != "null" {
			trigger := events.TriggerAuto
			if ev.Reason == "manual" {
				trigger = events.TriggerManual
			}
			c.add(events.CompactBoundary{MessageBase: c.base("compaction"), Trigger: trigger, PreTokens: r.TokensBefore})
		}
	case "auto_retry_start":
		c.add(retryNotice(c.session, ev))
	case "auto_retry_end":
		if ev.Success != nil && !*ev.Success && ev.FinalError != "" {
			c.lastError = errorText(ev.FinalError)
		}
	case "agent_end":
		c.end()
	}
	return c.Take()
}

// Known reports whether the converter or the run loop reads an event type;
// the others are logged once and ignored.
func Known(typ string) bool {
	switch typ {
	case "response", "agent_start", "agent_end", "turn_start", "turn_end", "message_start", "message_update",
		"message_end", "tool_execution_start", "tool_execution_update", "tool_execution_end", "queue_update",
		"compaction_start", "compaction_end", "auto_retry_start", "auto_retry_end", "extension_ui_request",
		"extension_error":
		return true
	}
	return false
}

// Take returns the outputs added so far and clears them.
func (c *Converter) Take() []events.Output {
	out := c.out
	c.out = nil
	return out
}

// Finish closes a stream left open (a turn that broke off).
func (c *Converter) Finish() []events.Output {
	c.closeStream()
	return c.Take()
}

// Interrupted ends a turn pi did not end itself after an abort (it died).
func (c *Converter) Interrupted() []events.Output {
	c.aborted = true
	c.end()
	return c.Take()
}

// add appends outputs: the system_init first, and an open stream closed
// before anything persisted.
func (c *Converter) add(outs ...events.Output) {
	c.init()
	for _, o := range outs {
		if events.IsPersisted(o) {
			c.closeStream()
		}
		c.out = append(c.out, o)
	}
}

func (c *Converter) init() {
	if c.initSent {
		return
	}
	c.initSent = true
	c.out = append(c.out, events.SystemInit{SessionID: c.session, Model: c.Model, Engine: events.EnginePi,
		Tools: []string{}, MCPServers: c.MCPServers})
}

// Init emits the system_init now (the turn has started).
func (c *Converter) Init() []events.Output {
	c.init()
	return c.Take()
}

// delta streams text and thinking deltas.
func (c *Converter) delta(ae AssistantEvent) {
	switch ae.Type {
	case "text_start", "thinking_start":
		c.openStream(ae.ContentIndex, ae.Type == "thinking_start")
	case "text_delta", "thinking_delta":
		reasoning := ae.Type == "thinking_delta"
		if ae.Delta == "" {
			return
		}
		if s := c.stream; s == nil || s.index != ae.ContentIndex || s.reasoning != reasoning {
			c.openStream(ae.ContentIndex, reasoning)
		}
		c.add(events.StreamEvent{Event: events.StreamDelta, SessionID: c.session, Text: ae.Delta, Reasoning: reasoning})
	case "text_end", "thinking_end", "toolcall_start":
		c.closeStream()
	}
}

func (c *Converter) openStream(index int, reasoning bool) {
	c.closeStream()
	c.init()
	c.stream = &openStream{index: index, reasoning: reasoning}
	c.out = append(c.out, events.StreamEvent{Event: events.StreamStart, SessionID: c.session, Reasoning: reasoning})
}

func (c *Converter) closeStream() {
	if c.stream == nil {
		return
	}
	s := c.stream
	c.stream = nil
	c.out = append(c.out, events.StreamEvent{Event: events.StreamStop, SessionID: c.session, Reasoning: s.reasoning})
}

// assistant converts a finished assistant message, one output per block.
func (c *Converter) assistant(m Message) {
	c.closeStream()
	c.msgs++
	base := m.ResponseID
	if base == "" {
		base = c.session + ":m" + strconv.Itoa(c.msgs)
	}
	var u *events.TokenUsage
	if m.Usage != nil {
		c.calls++
		c.usage.InputTokens += m.Usage.Input
		c.usage.OutputTokens += m.Usage.Output
		c.usage.CacheReadInputTokens += m.Usage.CacheRead
		c.usage.CacheCreationInputTokens += m.Usage.CacheWrite
		c.cost += m.Usage.Cost.Total
		u = &events.TokenUsage{InputTokens: m.Usage.Input, OutputTokens: m.Usage.Output,
			CacheReadInputTokens: m.Usage.CacheRead, CacheCreationInputTokens: m.Usage.CacheWrite}
	}
	switch m.StopReason {
	case "aborted":
		c.aborted = true
	case "error":
		c.lastError = errorText(cmp.Or(m.ErrorMessage, "pi ended the turn with an error"))
	}
	for _, b := range m.Content {
		switch b.Type {
		case "thinking":
			if strings.TrimSpace(b.Thinking) != "" {
				c.add(events.ReasoningMessage{MessageBase: c.base(base), Text: b.Thinking})
			}
		case "text":
			if b.Text == "" {
				continue
			}
			c.add(events.AssistantMessage{MessageBase: c.base(base), StopReason: stopReason(m.StopReason),
				Content: []events.Block{events.TextBlock{Text: b.Text}}, Usage: u})
		case "toolCall":
			c.toolUseWith(b.ID, b.Name, b.Arguments, u)
		}
	}
}

func stopReason(s string) events.StopReason {
	switch s {
	case "stop":
		return events.StopEndTurn
	case "length":
		return events.StopMaxTokens
	case "aborted":
		return events.StopInterrupted
	}
	return ""
}

func (c *Converter) toolUse(id, name string, args json.RawMessage) {
	c.toolUseWith(id, name, args, nil)
}

// toolUseWith emits a tool call once per id.
func (c *Converter) toolUseWith(id, raw string, args json.RawMessage, u *events.TokenUsage) {
	if id == "" || c.emitted[id] {
		return
	}
	if c.emitted == nil {
		c.emitted = map[string]bool{}
	}
	c.emitted[id] = true
	name := ToolName(raw)
	c.add(events.AssistantMessage{MessageBase: c.base(id), StopReason: events.StopToolUse, Usage: u,
		Content: []events.Block{events.ToolUseBlock{ID: id, Name: name, Input: CanonicalInput(name, args)}}})
}

// ToolResult emits a call's result as a synthetic user message, once.
func (c *Converter) ToolResult(id, content string, isErr bool) {
	if c.answered[id] || !c.emitted[id] {
		return
	}
	if c.answered == nil {
		c.answered = map[string]bool{}
	}
	c.answered[id] = true
	c.add(events.UserMessage{MessageBase: c.base(id + ":result"), Synthetic: true,
		Content: []events.Block{events.ToolResultBlock{ToolUseID: id, Content: content, IsError: isErr}}})
}

func (c *Converter) base(id string) events.MessageBase {
	if c.parts == nil {
		c.parts = map[string]int{}
	}
	n := c.parts[id]
	c.parts[id]++
	if n > 0 {
		id += ":" + strconv.Itoa(n)
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return events.MessageBase{CreatedAt: now().UTC(), MessageID: id, SessionID: c.session,
		Engine: events.MessageEngine{Type: events.EnginePi, Provider: c.Provider, Model: events.ModelRef{ID: c.Model}}}
}

// retryNotice is the warning of pi retrying a failed model call: with the
// HTTP status pi puts before the provider's error ("429 {…}"), the
// adapter's usual retry notice; else pi's own words.
func retryNotice(session string, ev Event) events.Notification {
	if m := statusPrefix.FindStringSubmatch(strings.TrimSpace(ev.ErrorMessage)); m != nil {
		status, _ := strconv.Atoi(m[1])
		return engine.RetryNotice(session, "pi", status, ev.Attempt)
	}
	return events.Notification{SessionID: session, Level: events.LevelWarning, Title: "pi is retrying", Message: ev.ErrorMessage}
}
