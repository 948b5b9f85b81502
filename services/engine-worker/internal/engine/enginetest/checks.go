package enginetest

import (
	"fmt"

	"clopen.dev/pkg/events"
)

// CheckTurn checks the structural rules every adapter's turn obeys (the
// event contract, clopen-behaviors §1.5) and returns what it finds wrong:
//   - every output encodes, and decodes back to the same type;
//   - the turn opens with system_init and ends with one result;
//   - stream start and stop pair up, deltas fall inside a stream, and text
//     and reasoning streams never overlap;
//   - an assistant message holds at most one tool_use;
//   - a tool result travels in a synthetic user message with no
//     parent.toolUseId of its own (top level), answering an earlier tool_use;
//   - persisted messages have unique ids, a session and the engine's type.
//
// A turn that was cancelled (complete false) may stop anywhere: the stream
// and result rules do not apply to it.
func CheckTurn(typ events.EngineType, outs []events.Output, complete bool) []error {
	var errs []error
	bad := func(i int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("output %d: "+format, append([]any{i}, args...)...))
	}
	if len(outs) == 0 {
		return []error{fmt.Errorf("no outputs")}
	}
	if _, ok := outs[0].(events.SystemInit); !ok {
		bad(0, "first output is %s, want system_init", outs[0].OutputType())
	}
	results := 0
	var open *events.StreamEvent
	ids := map[string]bool{}
	toolUses := map[string]bool{}
	for i, o := range outs {
		data, err := events.EncodeOutput(o)
		if err != nil {
			bad(i, "encode: %v", err)
			continue
		}
		if back, err := events.DecodeOutput(data); err != nil || back.OutputType() != o.OutputType() {
			bad(i, "decode of %s: %v", data, err)
		}
		switch o := o.(type) {
		case events.Result:
			results++
			if i != len(outs)-1 {
				bad(i, "a result before the end of the turn")
			}
		case events.StreamEvent:
			switch o.Event {
			case events.StreamStart:
				if open != nil {
					bad(i, "stream start while a stream is open")
				}
				open = &o
			case events.StreamDelta:
				if open == nil || open.Reasoning != o.Reasoning {
					bad(i, "delta (reasoning=%v) outside its stream", o.Reasoning)
				}
			case events.StreamStop:
				if open == nil || open.Reasoning != o.Reasoning {
					bad(i, "stop (reasoning=%v) without its start", o.Reasoning)
				}
				open = nil
			}
			continue
		case events.AssistantMessage:
			n := 0
			for _, b := range o.Content {
				if tu, ok := b.(events.ToolUseBlock); ok {
					n++
					toolUses[tu.ID] = true
				}
			}
			if n > 1 {
				bad(i, "assistant message with %d tool_use blocks", n)
			}
		case events.UserMessage:
			for _, b := range o.Content {
				tr, ok := b.(events.ToolResultBlock)
				if !ok {
					continue
				}
				if !o.Synthetic {
					bad(i, "tool result in a user message that is not synthetic")
				}
				if o.Parent.ToolUseID == tr.ToolUseID {
					bad(i, "tool result carrier has parent.toolUseId = the call it answers")
				}
				if !toolUses[tr.ToolUseID] {
					bad(i, "tool result for %q, which no earlier tool_use made", tr.ToolUseID)
				}
			}
		}
		if open != nil && events.IsPersisted(o) && o.OutputType() != events.TypeUser {
			bad(i, "%s while a stream is open (a stream stops before its message)", o.OutputType())
		}
		if events.IsPersisted(o) {
			b := base(o)
			if ids[b.MessageID] {
				bad(i, "duplicate message id %q", b.MessageID)
			}
			ids[b.MessageID] = true
			if b.SessionID == "" || b.Engine.Type != typ {
				bad(i, "message without session (%q) or engine %q (want %s)", b.SessionID, b.Engine.Type, typ)
			}
		}
	}
	if !complete {
		return errs
	}
	if open != nil {
		errs = append(errs, fmt.Errorf("a stream is still open at the end"))
	}
	if results != 1 {
		errs = append(errs, fmt.Errorf("%d results, want 1", results))
	}
	return errs
}

func base(o events.Output) events.MessageBase {
	switch o := o.(type) {
	case events.UserMessage:
		return o.MessageBase
	case events.AssistantMessage:
		return o.MessageBase
	case events.ReasoningMessage:
		return o.MessageBase
	case events.CompactBoundary:
		return o.MessageBase
	}
	return events.MessageBase{}
}
