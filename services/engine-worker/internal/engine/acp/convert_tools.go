package acp

import (
	"encoding/json"
	"strings"

	"clopen.dev/pkg/events"
)

// The converter's tool calls: first sight, deferred emission, permission
// requests, refusals and results.

func (c *Converter) toolCall(tc ToolCall, meta json.RawMessage) []events.Output {
	if tc.ToolCallID == "" {
		return nil
	}
	s := c.state(tc.ToolCallID)
	s.merge(tc, meta)
	if s.done {
		return nil
	}
	switch tc.Status {
	case "in_progress":
		return c.emit(s)
	case "completed", "failed":
		out := c.emit(s)
		return append(out, c.result(s, toolOutput(tc), tc.Status == "failed")...)
	}
	return nil
}

// Permission folds a permission request's tool call in and makes sure its
// tool_use went out: a question is on screen before anyone answers it. It
// returns the call's canonical name and input, and whether it is a harness
// tool to allow without asking.
func (c *Converter) Permission(tc ToolCall, opts []PermissionOption) (outs []events.Output, name string, input json.RawMessage, harness bool) {
	s := c.state(tc.ToolCallID)
	s.merge(tc, nil)
	if s.MetaName == "" && c.Profile != nil && c.Profile.PermissionToolName != nil {
		s.MetaName = c.Profile.PermissionToolName(opts)
	}
	outs = c.emit(s)
	return outs, s.name, canonicalInput(s.name, &s.call), s.dropped
}

// Denied records that the user (or the policy) refused a call: its result
// is an error carrying msg, unless the agent already reported one.
func (c *Converter) Denied(id, msg string) []events.Output {
	s := c.calls[id]
	if s == nil || s.done {
		return nil
	}
	return c.result(s, msg, true)
}

// emit sends the tool_use of s (once), after stopping any open stream and
// emitting the calls seen before it.
func (c *Converter) emit(s *callState) []events.Output {
	if s.emitted {
		return nil
	}
	out := c.closeStream("")
	for _, id := range c.order {
		if o := c.calls[id]; o != s && !o.emitted {
			out = append(out, c.emitOne(o)...)
		}
		if id == s.ID {
			break
		}
	}
	return append(out, c.emitOne(s)...)
}

func (c *Converter) emitOne(s *callState) []events.Output {
	s.emitted = true
	s.name, s.raw = canonicalName(c.Profile, &s.call, c.MCPServers, c.MCPTools)
	s.name = events.CanonicalMCPAsk(s.name)
	if c.Profile != nil && (c.Profile.Drop[s.raw] || c.Profile.Drop[s.Title]) {
		s.dropped = true
		return nil
	}
	return []events.Output{events.AssistantMessage{MessageBase: c.base(), StopReason: events.StopToolUse,
		Content: []events.Block{events.ToolUseBlock{ID: s.ID, Name: s.name, Input: canonicalInput(s.name, &s.call)}}}}
}

// emitPending emits every call not yet emitted (their input is as known as
// it will be before something else goes out).
func (c *Converter) emitPending() []events.Output {
	var out []events.Output
	for _, id := range c.order {
		if s := c.calls[id]; !s.emitted {
			out = append(out, c.emitOne(s)...)
		}
	}
	return out
}

func (c *Converter) result(s *callState, content string, isErr bool) []events.Output {
	s.done = true
	if s.dropped {
		return nil
	}
	c.results++
	return []events.Output{events.UserMessage{MessageBase: c.base(), Synthetic: true,
		Content: []events.Block{events.ToolResultBlock{ToolUseID: s.ID, Content: content, IsError: isErr}}}}
}

// toolOutput is the text of a tool call's result: its content blocks (text,
// diffs, terminals), else its rawOutput.
func toolOutput(tc ToolCall) string {
	var parts []string
	var content []ToolCallContent
	if json.Unmarshal(tc.Content, &content) == nil {
		for _, tcc := range content {
			switch tcc.Type {
			case "content":
				var b ContentBlock
				if json.Unmarshal(tcc.Content, &b) == nil {
					parts = append(parts, blockText(b))
				}
			case "diff":
				parts = append(parts, "Edited "+tcc.Path)
			case "terminal":
				parts = append(parts, "[terminal "+tcc.TerminalID+"]")
			}
		}
	}
	if s := strings.Join(parts, "\n"); strings.TrimSpace(s) != "" {
		return s
	}
	return rawOutputText(tc.RawOutput)
}

// blockText is a content block as text; non-text blocks become a marker.
func blockText(b ContentBlock) string {
	switch b.Type {
	case "text":
		return b.Text
	case "image":
		return "[image]"
	case "resource_link":
		return b.URI
	case "resource":
		if b.Resource != nil {
			return b.Resource.Text
		}
	}
	return "[" + b.Type + "]"
}

// rawOutputText renders a rawOutput: a string as it is; an object's output
// (OpenCode), formatted_output/aggregated_output (codex-acp) or content
// (Copilot); anything else as compact JSON.
func rawOutputText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil {
		for _, k := range []string{"output", "formatted_output", "aggregated_output", "content", "result", "stdout"} {
			if json.Unmarshal(obj[k], &s) == nil && s != "" {
				return s
			}
		}
		// An MCP result: {"content":[{"type":"text","text":…}]} (Cline).
		var blocks []ContentBlock
		if json.Unmarshal(obj["content"], &blocks) == nil && len(blocks) > 0 {
			parts := make([]string, 0, len(blocks))
			for _, b := range blocks {
				parts = append(parts, blockText(b))
			}
			return strings.Join(parts, "\n")
		}
	}
	return string(raw)
}
