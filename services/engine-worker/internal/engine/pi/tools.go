package pi

import (
	"encoding/json"
	"strings"

	"clopen.dev/pkg/events"
)

// toolNames maps pi's built-in tools to their canonical names.
var toolNames = map[string]events.ToolName{
	"read": events.ToolRead, "bash": events.ToolBash, "edit": events.ToolEdit, "write": events.ToolWrite,
	"grep": events.ToolGrep, "glob": events.ToolGlob, "find": events.ToolGlob, "ls": events.ToolList,
	"list": events.ToolList, "ask_question": events.ToolAskUserQuestion,
}

// ToolName maps a pi tool name to its canonical name: pi's built-ins by
// table; Clopen's own AskUserQuestion and MCP tools (mcp__server__tool)
// pass through; anything else is marked unknown.
func ToolName(raw string) string {
	if n, ok := toolNames[raw]; ok {
		return string(n)
	}
	return events.ToCanonicalToolName(raw)
}

// CanonicalInput renames a pi tool's input fields to the canonical ones:
// path is filePath for Read, Edit and Write; edit's edits[] becomes
// oldString/newString (the first edit; all of them stay under edits);
// grep's ignoreCase is caseInsensitive; bash's timeout (seconds) becomes
// milliseconds. Other fields pass through. Input that is not a JSON object
// becomes {}.
func CanonicalInput(tool string, raw json.RawMessage) json.RawMessage {
	var in map[string]any
	if json.Unmarshal(raw, &in) != nil || in == nil {
		return json.RawMessage(`{}`)
	}
	rename := func(from, to string) {
		if v, ok := in[from]; ok {
			delete(in, from)
			in[to] = v
		}
	}
	switch events.ToolName(tool) {
	case events.ToolRead, events.ToolWrite:
		rename("path", "filePath")
	case events.ToolEdit:
		rename("path", "filePath")
		rename("oldText", "oldString")
		rename("newText", "newString")
		if edits, ok := in["edits"].([]any); ok && len(edits) > 0 {
			if first, ok := edits[0].(map[string]any); ok {
				in["oldString"], in["newString"] = first["oldText"], first["newText"]
			}
			if len(edits) == 1 {
				delete(in, "edits")
			}
		}
	case events.ToolGrep:
		rename("ignoreCase", "caseInsensitive")
	case events.ToolBash:
		if secs, ok := in["timeout"].(float64); ok {
			in["timeout"] = int64(secs * 1000)
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// text joins a content's text blocks; images become "[image]".
func text(c Content) string {
	parts := make([]string, 0, len(c))
	for _, b := range c {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
		}
	}
	return strings.Join(parts, "\n")
}
