package claude

import (
	"encoding/json"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
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
			name = engine.CamelCase(k)
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
