package codex

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
)

// itemStarted opens a text stream for an agent message and emits the tool
// calls of the items that are tools.
func (c *Converter) itemStarted(it Item) {
	switch it.Type {
	case "agentMessage":
		c.openStream(it.ID, false)
		if c.texts == nil {
			c.texts = map[string]*strings.Builder{}
		}
		c.texts[it.ID] = &strings.Builder{}
	case "commandExecution":
		c.ToolUse(it.ID, string(events.ToolBash), bashInput(it.Command))
	case "fileChange":
		c.fileUses(it)
	case "mcpToolCall":
		c.ToolUse(it.ID, MCPToolName(it.Server, it.Tool), mcpInput(it.Arguments))
		c.openMCP = append(c.openMCP, it)
	}
}

// itemCompleted emits an item's message or its tool results.
func (c *Converter) itemCompleted(it Item) {
	switch it.Type {
	case "agentMessage":
		text := it.Text
		if b := c.texts[it.ID]; text == "" && b != nil {
			text = b.String()
		}
		delete(c.texts, it.ID)
		if c.stream != nil && c.stream.item == it.ID {
			c.closeStream()
		}
		if text != "" {
			c.add(events.AssistantMessage{MessageBase: c.base(it.ID), Content: []events.Block{events.TextBlock{Text: text}}})
		}
	case "reasoning":
		if c.stream != nil && c.stream.item == it.ID {
			c.closeStream()
		}
		text := strings.Join(nonBlank(it.Summary), "\n\n")
		if text == "" {
			text = strings.Join(nonBlank(it.Content), "\n\n")
		}
		if text != "" {
			c.add(events.ReasoningMessage{MessageBase: c.base(it.ID), Text: text})
		}
	case "commandExecution":
		c.ToolUse(it.ID, string(events.ToolBash), bashInput(it.Command))
		c.ToolResult(it.ID, commandOutput(it), it.Status != "completed" || it.ExitCode != nil && *it.ExitCode != 0)
	case "fileChange":
		uses := c.fileUses(it)
		for _, u := range uses {
			content, isErr := fileOutcome(it.Status, u)
			c.ToolResult(u.id, content, isErr)
		}
	case "mcpToolCall":
		c.ToolUse(it.ID, MCPToolName(it.Server, it.Tool), mcpInput(it.Arguments))
		for i, o := range c.openMCP {
			if o.ID == it.ID {
				c.openMCP = append(c.openMCP[:i], c.openMCP[i+1:]...)
				break
			}
		}
		content := mcpText(it.Result)
		isErr := it.Status == "failed" || it.Error != nil
		if it.Error != nil && it.Error.Message != "" {
			content = it.Error.Message
		}
		c.ToolResult(it.ID, content, isErr)
	case "webSearch":
		if q := webQuery(it); q != "" {
			c.ToolUse(it.ID, string(events.ToolWebSearch), mustJSON(events.WebSearchInput{Query: q}))
			c.ToolResult(it.ID, "Searched the web for "+strconv.Quote(q), false)
		}
	}
}

// fileUses emits (once) and returns the per-file calls of a fileChange item.
func (c *Converter) fileUses(it Item) []toolUse {
	if c.files == nil {
		c.files = map[string][]toolUse{}
	}
	uses, ok := c.files[it.ID]
	if !ok && len(it.Changes) > 0 {
		uses = fileToolUses(it)
		c.files[it.ID] = uses
	}
	for _, u := range uses {
		c.ToolUse(u.id, u.name, u.input)
	}
	return uses
}

// FileUses are the per-file calls of a fileChange item already seen.
func (c *Converter) FileUses(itemID string) []toolUse { return c.files[itemID] }

// OpenMCPCall is the id of the MCP call of server and tool that has started
// and not completed: the call an MCP approval is about.
func (c *Converter) OpenMCPCall(server, tool string) string {
	for i := len(c.openMCP) - 1; i >= 0; i-- {
		if o := c.openMCP[i]; o.Server == server && o.Tool == tool {
			return o.ID
		}
	}
	return ""
}

func fileOutcome(status string, u toolUse) (string, bool) {
	var in struct {
		FilePath string `json:"filePath"`
	}
	_ = json.Unmarshal(u.input, &in)
	switch status {
	case "completed":
		if u.name == string(events.ToolWrite) {
			return "Wrote " + in.FilePath, false
		}
		return "Patched " + in.FilePath, false
	case "declined":
		return "The change to " + in.FilePath + " was declined", true
	}
	return "The change to " + in.FilePath + " failed", true
}

// commandOutput is a command's result as the model saw it: its output, and
// why it did not run or how it failed.
func commandOutput(it Item) string {
	out := ""
	if it.AggregatedOutput != nil {
		out = *it.AggregatedOutput
	}
	switch {
	case it.Status == "declined":
		return strings.TrimSpace(out + "\nThe command was declined")
	case it.ExitCode != nil && *it.ExitCode != 0:
		return strings.TrimSpace(fmt.Sprintf("%s\nExit code %d", out, *it.ExitCode))
	case it.Status == "failed" && out == "":
		return "The command failed"
	}
	return out
}

// ToolUse emits the assistant message carrying one tool call, once per id.
func (c *Converter) ToolUse(id, name string, input json.RawMessage) {
	if c.emitted[id] {
		return
	}
	if c.emitted == nil {
		c.emitted = map[string]bool{}
	}
	c.emitted[id] = true
	c.add(events.AssistantMessage{MessageBase: c.base(id), StopReason: events.StopToolUse,
		Content: []events.Block{events.ToolUseBlock{ID: id, Name: name, Input: input}}})
}

// ToolResult emits a call's result as a synthetic user message, once per id.
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

// Take returns the outputs added outside Convert (by ToolUse and
// ToolResult calls of the run loop) and clears them.
func (c *Converter) Take() []events.Output {
	out := c.out
	c.out = nil
	return out
}

func (c *Converter) textDelta(p deltaParams) {
	if p.Delta == "" {
		return
	}
	if c.stream == nil || c.stream.item != p.ItemID || c.stream.reasoning {
		c.openStream(p.ItemID, false)
	}
	if b := c.texts[p.ItemID]; b != nil {
		b.WriteString(p.Delta)
	} else {
		if c.texts == nil {
			c.texts = map[string]*strings.Builder{}
		}
		b = &strings.Builder{}
		b.WriteString(p.Delta)
		c.texts[p.ItemID] = b
	}
	c.add(events.StreamEvent{Event: events.StreamDelta, SessionID: c.thread, Text: p.Delta})
}

// reasoningDelta streams reasoning summaries; a new summary part is set
// off by a blank line, as in the finished message.
func (c *Converter) reasoningDelta(p deltaParams) {
	if p.Delta == "" {
		return
	}
	if c.summaries == nil {
		c.summaries = map[string]int{}
	}
	last, seen := c.summaries[p.ItemID]
	if c.stream == nil || c.stream.item != p.ItemID || !c.stream.reasoning {
		c.openStream(p.ItemID, true)
	}
	delta := p.Delta
	if seen && p.SummaryIndex > last {
		delta = "\n\n" + delta
	}
	c.summaries[p.ItemID] = p.SummaryIndex
	c.add(events.StreamEvent{Event: events.StreamDelta, SessionID: c.thread, Text: delta, Reasoning: true})
}

// openStream starts a stream for item, closing any other first.
func (c *Converter) openStream(item string, reasoning bool) {
	c.closeStream()
	c.init()
	c.stream = &openStream{item: item, reasoning: reasoning}
	c.out = append(c.out, events.StreamEvent{Event: events.StreamStart, SessionID: c.thread, Reasoning: reasoning})
}

func (c *Converter) closeStream() {
	if c.stream == nil {
		return
	}
	s := c.stream
	c.stream = nil
	c.out = append(c.out, events.StreamEvent{Event: events.StreamStop, SessionID: c.thread, Reasoning: s.reasoning})
}

// plan emits codex's todo list as a TodoWrite call with its result.
func (c *Converter) plan(p planParams) {
	todos := make([]map[string]string, 0, len(p.Plan))
	for _, s := range p.Plan {
		todos = append(todos, map[string]string{"content": s.Step, "status": todoStatus(s.Status), "activeForm": s.Step})
	}
	c.plans++
	id := "plan_" + cmp.Or(p.TurnID, c.turn) + "_" + strconv.Itoa(c.plans)
	c.ToolUse(id, string(events.ToolTodoWrite), mustJSON(map[string]any{"todos": todos}))
	c.ToolResult(id, "Todo list updated", false)
}

func nonBlank(ss []string) []string {
	var out []string
	for _, s := range ss {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
