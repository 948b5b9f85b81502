package enginetest

import (
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
)

// assistantText is the text of the last assistant message with text.
func assistantText(outs []events.Output) string {
	for i := len(outs) - 1; i >= 0; i-- {
		a, ok := outs[i].(events.AssistantMessage)
		if !ok {
			continue
		}
		var s string
		for _, b := range a.Content {
			if tb, ok := b.(events.TextBlock); ok {
				s += tb.Text
			}
		}
		if s != "" {
			return s
		}
	}
	return ""
}

// streamedText joins the deltas of the last text (or reasoning) stream.
func streamedText(outs []events.Output, reasoning bool) string {
	var cur, last string
	for _, o := range outs {
		se, ok := o.(events.StreamEvent)
		if !ok || se.Reasoning != reasoning {
			continue
		}
		switch se.Event {
		case events.StreamStart:
			cur = ""
		case events.StreamDelta:
			cur += se.Text
		case events.StreamStop:
			last = cur
		}
	}
	return last
}

// toolUseNamed is the id of the first tool_use of the named tool.
func toolUseNamed(outs []events.Output, name string) string {
	for _, o := range outs {
		if id, n := toolUse(o); n == name {
			return id
		}
	}
	return ""
}

// toolResult finds the result of tool use id.
func toolResult(outs []events.Output, id string) (events.ToolResultBlock, bool) {
	for _, o := range outs {
		u, ok := o.(events.UserMessage)
		if !ok {
			continue
		}
		for _, b := range u.Content {
			if tr, ok := b.(events.ToolResultBlock); ok && tr.ToolUseID == id {
				return tr, true
			}
		}
	}
	return events.ToolResultBlock{}, false
}

// kinds lists the output types, for failure messages.
func kinds(outs []events.Output) string {
	parts := make([]string, 0, len(outs))
	for _, o := range outs {
		k := o.OutputType()
		if se, ok := o.(events.StreamEvent); ok {
			k += ":" + string(se.Event)
		}
		parts = append(parts, k)
	}
	return strings.Join(parts, " ")
}

// processesIn lists the pids of processes whose working directory is dir
// (agents run in their workspace; so do their children).
func processesIn(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}
