package chatcmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"clopen.dev/pkg/events"
)

// onFrame shows one server frame.
func (c *chat) onFrame(f events.ServerFrame) {
	switch f.Type {
	case events.WSFrameSnapshot:
		if f.Payload != nil {
			c.onSnapshot(f)
		}
	case events.WSFrameEvent:
		ev, err := events.DecodeChatEvent(f.Event)
		if err != nil {
			return // a newer server's event this client cannot read
		}
		if ev.ChatSessionID != c.session.ID {
			c.onOtherSession(ev)
			return
		}
		if f.Cursor > 0 {
			c.cursor = f.Cursor
		}
		c.onEvent(ev)
	}
}

// onSnapshot learns the tool calls of the saved messages (a question may be
// pending) and shows the active run's text so far.
func (c *chat) onSnapshot(f events.ServerFrame) {
	snap := f.Payload
	c.cursor = snap.Cursor
	for _, row := range snap.Messages {
		c.shown[row.RowID] = true
		if o, err := events.DecodeOutput(row.Message); err == nil {
			c.learnTools(o)
		}
	}
	if f.Reload {
		c.out.linef("[reloaded the session: %d messages]", len(snap.Messages))
	} else if n := len(snap.Messages); n > 0 {
		c.out.linef("[%d earlier messages]", n)
	}
	if r := snap.ActiveRun; r != nil && !r.State.Terminal() {
		c.runs[r.ID] = true
		c.out.linef("[a turn is running (%s)]", r.State)
		c.out.stream(snap.PartialText)
		c.streamed = snap.PartialText != ""
	}
}

func (c *chat) onOtherSession(ev events.ChatEvent) {
	switch d := ev.Data.(type) {
	case events.ChatStreamFinished:
		c.out.linef("[session %s finished: %s]", d.ChatSessionID, d.Status)
	case events.ChatWaitingInput:
		c.out.linef("[session %s is waiting for your answer]", d.ChatSessionID)
	}
}

// onEvent shows one chat event of the joined session.
func (c *chat) onEvent(ev events.ChatEvent) {
	switch d := ev.Data.(type) {
	case events.ChatPartial:
		switch d.EventType {
		case events.PartialStart:
			c.out.endLine()
			if d.Reasoning {
				c.out.stream("(thinking) ")
			}
		case events.PartialUpdate:
			c.out.stream(d.DeltaText)
			c.streamed = true
		case events.PartialEnd:
			c.out.endLine()
		}
	case events.ChatMessage:
		c.onMessage(ev, d.Message)
	case events.ChatNotification:
		c.out.linef("[%s] %s", d.Level, strings.TrimSpace(d.Title+": "+d.Message))
	case events.ChatRateLimit:
		line := fmt.Sprintf("[rate limit] %s: %s, %.0f%% used", d.Engine, d.Status, d.Utilization*100)
		if d.ResetsAt > 0 {
			line += ", resets " + time.Unix(d.ResetsAt, 0).Format("15:04")
		}
		c.out.linef("%s", line)
	case events.ChatError:
		c.out.linef("error: %s", d.Error)
	case events.ChatCancelled:
		c.out.linef("[cancelled]")
	case events.ChatComplete:
		if d.Usage != nil {
			c.out.linef("[done: %d tokens in, %d out]", d.Usage.InputTokens, d.Usage.OutputTokens)
		}
	case events.ChatMessagesChanged:
		c.out.linef("[messages changed: %s]", d.Reason)
	case events.ChatStreamFinished:
		c.finish(ev.RunID)
	case events.ChatRunState:
		c.onRunState(ev.RunID, d)
	}
}

// onMessage shows a saved message. Text that already streamed is not shown
// again; tool calls and their results are shown compactly.
func (c *chat) onMessage(ev events.ChatEvent, o events.Output) {
	c.learnTools(o)
	if row := ev.Data.(events.ChatMessage).MessageRowID; row != "" {
		if c.shown[row] {
			return // a message already shown
		}
		c.shown[row] = true
	}
	streamed := c.streamed
	c.streamed = false
	switch m := o.(type) {
	case events.AssistantMessage:
		for _, b := range m.Content {
			switch b := b.(type) {
			case events.TextBlock:
				if !streamed {
					c.out.linef("%s", b.Text)
				}
			case events.ToolUseBlock:
				c.out.linef("⏺ %s", toolLine(b))
			}
		}
	case events.ReasoningMessage:
		if !streamed {
			c.out.linef("(thinking) %s", clip(m.Text, 200))
		}
	case events.UserMessage:
		for _, b := range m.Content {
			switch b := b.(type) {
			case events.ToolResultBlock:
				mark := "⎿"
				if b.IsError {
					mark = "⎿ error:"
				}
				c.out.linef("  %s %s", mark, clip(b.Content, 100))
			case events.TextBlock:
				if !m.Synthetic && !c.runs[ev.RunID] {
					c.out.linef("[%s] %s", cmpOr(m.Sender.Name, "someone"), b.Text)
				}
			}
		}
	case events.CompactBoundary:
		c.out.linef("[context compacted]")
	}
}

func (c *chat) learnTools(o events.Output) {
	if m, ok := o.(events.AssistantMessage); ok {
		for _, b := range m.Content {
			if t, ok := b.(events.ToolUseBlock); ok {
				c.tools[t.ID] = t
			}
		}
	}
}

// onRunState follows the run's state: questions to answer, the end of the
// turn.
func (c *chat) onRunState(run string, d events.ChatRunState) {
	switch {
	case d.State == events.RunAwaitingInput:
		c.startAsking(run, d)
	case d.State == events.RunCancelling:
		c.out.linef("[cancelling]")
	case d.State == events.RunFailed:
		c.out.linef("[failed: %s]", cmpOr(d.Error, d.Reason))
	case d.State == events.RunLost:
		c.out.linef("[the run was lost: %s]", cmpOr(d.Error, "its worker vanished"))
	}
	if d.State.Terminal() {
		c.finish(run)
	}
}

// finish forgets a run that ended and shows the prompt when none is left.
func (c *chat) finish(run string) {
	if !c.runs[run] {
		return
	}
	delete(c.runs, run)
	if c.ask != nil && c.ask.run == run {
		c.ask = nil
	}
	c.prompt()
}

// toolLine is a tool call in one line: its name and its most telling input.
func toolLine(b events.ToolUseBlock) string {
	var in map[string]any
	_ = json.Unmarshal(b.Input, &in)
	for _, k := range []string{"command", "file_path", "path", "pattern", "url", "query", "description", "prompt"} {
		if v, ok := in[k].(string); ok && v != "" {
			return fmt.Sprintf("%s(%s)", b.Name, clip(v, 80))
		}
	}
	if len(in) == 0 {
		return b.Name
	}
	return fmt.Sprintf("%s(%s)", b.Name, clip(string(b.Input), 80))
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
