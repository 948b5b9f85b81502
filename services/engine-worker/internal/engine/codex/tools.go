package codex

import (
	"encoding/json"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
)

// toolUse is one canonical tool call an item stands for.
type toolUse struct {
	id    string
	name  string
	input json.RawMessage
}

// shellWrappers are the launchers codex puts around a model's command.
var shellWrappers = []string{"/bin/bash -lc ", "/bin/bash -c ", "bash -lc ", "bash -c ", "/bin/zsh -lc ", "zsh -lc ", "/bin/sh -c ", "sh -c "}

// UnwrapShell returns the command a model asked for: codex runs it as
// `/bin/bash -lc '<command>'`, which is not what the model wrote nor what a
// person approves. Anything else is returned as it is.
func UnwrapShell(cmd string) string {
	for _, w := range shellWrappers {
		rest, ok := strings.CutPrefix(cmd, w)
		if !ok {
			continue
		}
		if s, ok := unquote(rest); ok {
			return s
		}
		return rest
	}
	return cmd
}

// unquote undoes POSIX shell single quoting, in which a quote inside a
// quoted word is written as quote, backslash, quote, quote; ok is false
// when s is not one single-quoted word.
func unquote(s string) (string, bool) {
	var b strings.Builder
	for len(s) > 0 {
		switch {
		case s[0] == '\'':
			end := strings.IndexByte(s[1:], '\'')
			if end < 0 {
				return "", false
			}
			b.WriteString(s[1 : 1+end])
			s = s[end+2:]
		case strings.HasPrefix(s, `\'`):
			b.WriteByte('\'')
			s = s[2:]
		default:
			return "", false
		}
	}
	return b.String(), true
}

// bashInput is the canonical Bash input of a command.
func bashInput(command string) json.RawMessage {
	return mustJSON(events.BashInput{Command: UnwrapShell(command)})
}

// fileToolUses maps a fileChange item to one tool call per file: a new file
// is a Write (its diff is the content), a changed, moved or deleted one a
// Patch carrying the diff. The first file keeps the item's id; the others
// get id:1, id:2...
func fileToolUses(it Item) []toolUse {
	out := make([]toolUse, 0, len(it.Changes))
	for i, c := range it.Changes {
		id := it.ID
		if i > 0 {
			id += ":" + strconv.Itoa(i)
		}
		if c.Kind.Type == "add" {
			out = append(out, toolUse{id: id, name: string(events.ToolWrite),
				input: mustJSON(events.WriteInput{FilePath: c.Path, Content: addedContent(c.Diff)})})
			continue
		}
		in := map[string]any{"filePath": c.Path, "patch": c.Diff}
		if c.Kind.MovePath != "" {
			in["movePath"] = c.Kind.MovePath
		}
		if c.Kind.Type == "delete" {
			in["delete"] = true
		}
		out = append(out, toolUse{id: id, name: string(events.ToolPatch), input: mustJSON(in)})
	}
	return out
}

// addedContent is the content of a new file: codex gives it as is, or as a
// diff whose every line is an addition.
func addedContent(diff string) string {
	if !strings.HasPrefix(diff, "+") && !strings.HasPrefix(diff, "@@") && !strings.HasPrefix(diff, "---") {
		return diff
	}
	var b strings.Builder
	for _, line := range strings.SplitAfter(diff, "\n") {
		switch {
		case line == "", strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "@@"):
		case strings.HasPrefix(line, "+"):
			b.WriteString(line[1:])
		default:
			return diff // not a pure addition: keep what codex sent
		}
	}
	return b.String()
}

// MCPToolName is the canonical name of an MCP tool: mcp__<server>__<tool>.
func MCPToolName(server, tool string) string {
	return events.MCPToolPrefix + server + "__" + tool
}

// mcpInput is an MCP call's arguments as an object ({} when absent).
func mcpInput(args json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil || m == nil {
		return json.RawMessage(`{}`)
	}
	return args
}

// mcpText flattens an MCP result: its text blocks, "[image]" for images.
func mcpText(r *MCPResult) string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, raw := range r.Content {
		var c struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(raw, &c) != nil {
			continue
		}
		switch c.Type {
		case "text":
			parts = append(parts, c.Text)
		case "image":
			parts = append(parts, "[image]")
		default:
			parts = append(parts, string(raw))
		}
	}
	return strings.Join(parts, "\n")
}

// webQuery is what a web search searched for; "" when it did not search
// (opened a page) or the query is unknown.
func webQuery(it Item) string {
	if it.Query != "" {
		return it.Query
	}
	if a := it.Action; a != nil && a.Type == "search" {
		if a.Query != "" {
			return a.Query
		}
		return strings.Join(a.Queries, " | ")
	}
	return ""
}

// todoStatus maps codex's plan step status to TodoWrite's.
func todoStatus(s string) string {
	switch s {
	case "inProgress", "in_progress":
		return "in_progress"
	case "completed":
		return "completed"
	}
	return "pending"
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}
