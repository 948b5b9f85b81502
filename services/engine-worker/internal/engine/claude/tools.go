package claude

import (
	"encoding/json"
	"strings"
	"unicode"
	"unicode/utf8"

	"clopen.dev/pkg/events"
)

// ToolName maps a Claude Code tool name to its canonical name. Claude's
// names are the canonical ones, except Task, which is Agent; MCP tools
// (mcp__server__tool) pass through; anything else is marked unknown.
func ToolName(raw string) string {
	if raw == "Task" {
		return string(events.ToolAgent)
	}
	return events.ToCanonicalToolName(raw)
}

// inputRenames are Claude's input fields whose canonical name is not just
// the camelCase of the snake_case one (Grep's flag-named fields).
var inputRenames = map[string]string{
	"-A": "after",
	"-B": "before",
	"-C": "context",
	"-i": "caseInsensitive",
	"-n": "lineNumbers",
}

// CanonicalInput renames the top-level fields of a tool input to the
// canonical camelCase (file_path to filePath, subagent_type to
// subagentType, Grep's -A to after) and gives Agent its default sub-agent
// type. Nested values are left as the CLI sent them. Input that is not a
// JSON object becomes {}.
func CanonicalInput(tool string, raw json.RawMessage) json.RawMessage {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return json.RawMessage(`{}`)
	}
	out := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		name, ok := inputRenames[k]
		if !ok {
			name = camel(k)
		}
		out[name] = v
	}
	if tool == string(events.ToolAgent) {
		var st string
		if json.Unmarshal(out["subagentType"], &st) != nil || st == "" {
			out["subagentType"] = json.RawMessage(`"general-purpose"`)
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// camel turns snake_case into camelCase; other names are returned as they are.
func camel(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		r, size := utf8.DecodeRuneInString(p)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(p[size:])
	}
	return b.String()
}
