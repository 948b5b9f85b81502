package claude

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
)

// Converter turns the stdout lines of one turn into engine outputs. It does
// no I/O: the same lines always give the same outputs (given Now), which the
// golden tests pin. It keeps the little state the event contract needs: the
// open text or reasoning stream (so start and stop pair up and a stream is
// stopped before its whole message goes out), and how many outputs each
// model message has produced (split ids base, base:1, ...).
//
// A Converter serves one turn and is not safe for concurrent use.
type Converter struct {
	// Model is the model the turn asked for; messages carry it as their
	// engine model id. Empty means the model the CLI reports.
	Model string
	// Now stamps messages; nil means time.Now.
	Now func() time.Time

	stream *openStream
	parts  map[string]int
}

type openStream struct {
	index     int
	reasoning bool
	session   string
}

// Convert returns the outputs of one line, possibly none.
func (c *Converter) Convert(l Line) []events.Output {
	switch l.Type {
	case "system":
		return c.system(l)
	case "stream_event":
		return c.streamEvent(l)
	case "assistant":
		return c.assistant(l)
	case "user":
		return c.user(l)
	case "result":
		return append(c.Finish(), convertResult(l))
	case "rate_limit_event":
		return rateLimit(l)
	}
	return nil
}

// Finish closes a stream left open (a turn that broke off mid-stream).
func (c *Converter) Finish() []events.Output {
	if c.stream == nil {
		return nil
	}
	s := c.stream
	c.stream = nil
	return []events.Output{events.StreamEvent{Event: events.StreamStop, SessionID: s.session, Reasoning: s.reasoning}}
}

// Known reports whether the converter reads lines of type typ; the control
// lines are the run loop's own.
func Known(typ string) bool {
	switch typ {
	case "system", "stream_event", "assistant", "user", "result", "rate_limit_event", "control_request",
		"control_response", "control_cancel_request", "keep_alive":
		return true
	}
	return false
}

// system converts system lines. Only init and compact_boundary belong in
// the transcript. The others are left out on purpose: status ("requesting")
// and thinking_tokens are progress noise; api_retry is transient (a retry
// that fails ends in a failed result, which says why); hook_*, task_* and
// notification carry nothing the event contract has a place for yet.
func (c *Converter) system(l Line) []events.Output {
	switch l.Subtype {
	case "init":
		servers := make([]events.MCPServer, 0, len(l.MCPServers))
		for _, s := range l.MCPServers {
			servers = append(servers, events.MCPServer{Name: s.Name, Status: events.NormalizeMCPStatus(s.Status)})
		}
		tools := l.Tools
		if tools == nil {
			tools = []string{}
		}
		return []events.Output{events.SystemInit{SessionID: l.SessionID, Model: l.Model,
			Engine: events.EngineClaudeCode, Tools: tools, MCPServers: servers}}
	case "compact_boundary":
		cb := events.CompactBoundary{MessageBase: c.base(l, l.UUID, ""), Trigger: events.TriggerAuto}
		if m := l.CompactMetadata; m != nil {
			if t := events.CompactTrigger(m.Trigger); t.Valid() {
				cb.Trigger = t
			}
			cb.PreTokens = m.PreTokens
		}
		return []events.Output{cb}
	}
	return nil
}

// streamEvent forwards text and thinking deltas of the top-level agent.
// Sub-agent deltas are dropped: a stream event has no parent to tag.
func (c *Converter) streamEvent(l Line) []events.Output {
	ev := l.Event
	if ev == nil || l.ParentToolUseID != "" {
		return nil
	}
	switch ev.Type {
	case "content_block_start":
		if ev.ContentBlock == nil {
			return nil
		}
		out := c.Finish()
		var reasoning bool
		switch ev.ContentBlock.Type {
		case "text":
		case "thinking":
			reasoning = true
		default:
			return out
		}
		c.stream = &openStream{index: ev.Index, reasoning: reasoning, session: l.SessionID}
		return append(out, events.StreamEvent{Event: events.StreamStart, SessionID: l.SessionID, Reasoning: reasoning})
	case "content_block_delta":
		s, d := c.stream, ev.Delta
		if s == nil || d == nil || s.index != ev.Index {
			return nil
		}
		var text string
		switch {
		case d.Type == "text_delta" && !s.reasoning:
			text = d.Text
		case d.Type == "thinking_delta" && s.reasoning:
			text = d.Thinking
		}
		if text == "" {
			return nil
		}
		return []events.Output{events.StreamEvent{Event: events.StreamDelta, SessionID: l.SessionID, Text: text, Reasoning: s.reasoning}}
	case "content_block_stop":
		if c.stream != nil && c.stream.index == ev.Index {
			return c.Finish()
		}
	case "message_stop":
		return c.Finish()
	}
	return nil
}

// assistant converts one assistant line. The CLI may write the whole block
// before the block's content_block_stop, so the open stream is stopped here
// first: a stream always stops before its message.
func (c *Converter) assistant(l Line) []events.Output {
	m := l.Message
	if m == nil {
		return nil
	}
	var out []events.Output
	if l.ParentToolUseID == "" {
		out = c.Finish()
	}
	if l.IsAPIErrorMessage {
		return out // the result reports the failure once, classified
	}
	base := m.ID
	if base == "" {
		base = l.UUID
	}
	for _, b := range m.Content {
		switch b.Type {
		case "thinking":
			if strings.TrimSpace(b.Thinking) == "" {
				continue
			}
			out = append(out, events.ReasoningMessage{MessageBase: c.base(l, base, m.Model), Text: b.Thinking})
		case "text":
			if b.Text == "" {
				continue
			}
			stop := events.StopReason(m.StopReason)
			if !stop.Valid() || stop == events.StopToolUse {
				stop = ""
			}
			if l.Aborted {
				stop = events.StopInterrupted
			}
			out = append(out, events.AssistantMessage{MessageBase: c.base(l, base, m.Model), StopReason: stop,
				Content: []events.Block{events.TextBlock{Text: b.Text}}, Usage: usage(m.Usage)})
		case "tool_use":
			name := ToolName(b.Name)
			out = append(out, events.AssistantMessage{MessageBase: c.base(l, base, m.Model), StopReason: events.StopToolUse,
				Content: []events.Block{events.ToolUseBlock{ID: b.ID, Name: name, Input: CanonicalInput(name, b.Input)}},
				Usage:   usage(m.Usage)})
		}
	}
	return out
}

// user converts the tool results of a user line into synthetic user
// messages, one per result. Their own parent is the sub-agent's, if any:
// the call they answer is named only inside the tool_result block.
func (c *Converter) user(l Line) []events.Output {
	m := l.Message
	if m == nil {
		return nil
	}
	base := l.UUID
	if base == "" {
		base = m.ID
	}
	var out []events.Output
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			continue // prompts echoed back, "[Request interrupted by user]"
		}
		out = append(out, events.UserMessage{MessageBase: c.base(l, base, ""), Synthetic: true,
			Content: []events.Block{events.ToolResultBlock{ToolUseID: b.ToolUseID, Content: flatten(b.Content), IsError: b.IsError}}})
	}
	return out
}

func (c *Converter) base(l Line, id, model string) events.MessageBase {
	if c.parts == nil {
		c.parts = map[string]int{}
	}
	n := c.parts[id]
	c.parts[id]++
	if n > 0 {
		id += ":" + strconv.Itoa(n)
	}
	if c.Model != "" {
		model = c.Model
	}
	now := time.Now
	if c.Now != nil {
		now = c.Now
	}
	return events.MessageBase{CreatedAt: now().UTC(), MessageID: id, SessionID: l.SessionID,
		Parent: events.Parent{ToolUseID: l.ParentToolUseID},
		Engine: events.MessageEngine{Type: events.EngineClaudeCode, Provider: Provider, Model: events.ModelRef{ID: model}}}
}

// flatten turns a tool_result's content (a string or a list of blocks) into
// text; images become "[image]".
func flatten(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []ContentBlock
	if json.Unmarshal(raw, &blocks) != nil {
		return string(raw)
	}
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
}
