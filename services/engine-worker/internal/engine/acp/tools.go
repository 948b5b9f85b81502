package acp

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// kindTools is the canonical tool of each ACP tool kind, for calls whose
// agent does not say which tool it ran (the protocol only requires a kind).
var kindTools = map[string]events.ToolName{
	"execute":     events.ToolBash,
	"read":        events.ToolRead,
	"edit":        events.ToolEdit,
	"search":      events.ToolGrep,
	"fetch":       events.ToolWebFetch,
	"switch_mode": events.ToolExitPlanMode,
}

// call is what the client knows of one tool call, merged from the
// tool_call, its updates and its permission request.
type call struct {
	ID        string
	Title     string // the latest title
	FirstName string // the first title: some agents put the tool's name there
	Kind      string
	RawInput  map[string]json.RawMessage
	MetaName  string // the tool's own name, when _meta carries it
	Locations []string
}

// merge folds a tool call or an update into c: fields the update leaves
// out stay; rawInput keys are merged, later ones winning.
func (c *call) merge(tc ToolCall, meta json.RawMessage) {
	if tc.Title != "" {
		if c.Title == "" {
			c.FirstName = tc.Title
		}
		c.Title = tc.Title
	}
	if tc.Kind != "" {
		c.Kind = tc.Kind
	}
	var in map[string]json.RawMessage
	if json.Unmarshal(tc.RawInput, &in) == nil && in != nil {
		if c.RawInput == nil {
			c.RawInput = map[string]json.RawMessage{}
		}
		for k, v := range in {
			c.RawInput[k] = v
		}
	}
	for _, l := range tc.Locations {
		if l.Path != "" {
			c.Locations = append(c.Locations, l.Path)
		}
	}
	if n := metaToolName(meta); n != "" {
		c.MetaName = n
	}
}

// metaToolName reads the tool's name from an update's _meta: Qwen's
// {"toolName"} and the Claude adapters' {"claudeCode":{"toolName"}}.
func metaToolName(meta json.RawMessage) string {
	var m struct {
		ToolName   string `json:"toolName"`
		ClaudeCode struct {
			ToolName string `json:"toolName"`
		} `json:"claudeCode"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil {
		return ""
	}
	if m.ToolName != "" {
		return m.ToolName
	}
	return m.ClaudeCode.ToolName
}

// ToolNames maps an agent's raw tool names to canonical ones.
type ToolNames map[string]events.ToolName

// canonicalName names a call: its raw name (from _meta, or what the
// profile reads from the id or title) through the agent's map; an MCP tool
// as mcp__<server>__<tool>; else by its kind; else Unknown:<name>.
// offering, when not nil, names the servers that list a tool (see
// bareMCPServer).
func canonicalName(p *Profile, c *call, servers []string, offering func(tool string) []string) (name, raw string) {
	raw = c.MetaName
	if raw == "" && p.RawToolName != nil {
		raw = p.RawToolName(c.ID, c.FirstName)
	}
	if raw != "" {
		if strings.HasPrefix(raw, events.MCPToolPrefix) {
			return raw, raw
		}
		if t, ok := p.Tools[raw]; ok {
			return string(t), raw
		}
		if t, ok := p.Tools[strings.ToLower(raw)]; ok {
			return string(t), raw
		}
		if m := mcpName(raw, c.Title, servers); m != "" {
			return m, raw
		}
		// A bare tool name of kind other (Qwen names an MCP call this way
		// until it completes): the server that can have it.
		if c.Kind == "other" && !strings.ContainsAny(raw, " \t:/") {
			if s := bareMCPServer(raw, servers, offering); s != "" {
				return events.MCPToolPrefix + s + "__" + raw, raw
			}
		}
	}
	if m := mcpName("", c.Title, servers); m != "" {
		return m, raw
	}
	if t, ok := kindTools[c.Kind]; ok {
		if t == events.ToolEdit && c.RawInput != nil && c.RawInput["old_string"] == nil && c.RawInput["oldString"] == nil &&
			c.RawInput["old_text"] == nil && (c.RawInput["content"] != nil || c.RawInput["file_text"] != nil) {
			t = events.ToolWrite
		}
		return string(t), raw
	}
	return events.ToCanonicalToolName(cmp.Or(raw, cmp.Or(c.Kind, "tool"))), raw
}

// bareMCPServer is the server of the session's servers that a bare MCP
// tool name belongs to, "" when that cannot be told: with one server, it;
// else one of Clopen's own tools is the bridge's (every run has it beside
// the tenant's servers), any other tool the one external server's. With
// several external servers, the one of them that offering says lists the
// tool; when none or more than one does (or offering is nil) the name is
// left unknown rather than guessed.
func bareMCPServer(raw string, servers []string, offering func(tool string) []string) string {
	if len(servers) == 1 {
		return servers[0]
	}
	var external []string
	internal := false
	for _, s := range servers {
		if s == events.MCPInternalServer {
			internal = true
		} else {
			external = append(external, s)
		}
	}
	switch {
	case internal && slices.Contains(events.MCPInternalTools, raw):
		return events.MCPInternalServer
	case len(external) == 1:
		return external[0]
	case len(external) > 1 && offering != nil:
		var has []string
		for _, s := range offering(raw) {
			if slices.Contains(external, s) && !slices.Contains(has, s) {
				has = append(has, s)
			}
		}
		if len(has) == 1 {
			return has[0]
		}
	}
	return ""
}

// mcpName recognises a call of an MCP tool of one of the session's
// servers: a raw name "<server>__<tool>", "<server>_<tool>" or
// "<server>-<tool>", or a title "<tool> (<server> MCP Server)" (Gemini).
func mcpName(raw, title string, servers []string) string {
	for _, s := range servers {
		for _, sep := range []string{"__", "_", "-", "/", ":"} {
			if tool, ok := strings.CutPrefix(raw, s+sep); ok && tool != "" {
				return events.MCPToolPrefix + s + "__" + tool
			}
		}
		suffix := " (" + s + " MCP Server)"
		if tool, ok := strings.CutSuffix(title, suffix); ok && tool != "" && !strings.ContainsAny(tool, " \t") {
			return events.MCPToolPrefix + s + "__" + tool
		}
	}
	return ""
}

// inputAliases are raw input fields whose canonical name is not just their
// camelCase, per canonical tool.
var inputAliases = map[events.ToolName]map[string]string{
	events.ToolBash: {"cmd": "command", "commands": "command"},
	events.ToolRead: {"path": "filePath", "file_path": "filePath", "absolute_path": "filePath", "file": "filePath", "filename": "filePath"},
	events.ToolWrite: {"path": "filePath", "file_path": "filePath", "absolute_path": "filePath", "file": "filePath", "filename": "filePath",
		"file_text": "content", "contents": "content", "text": "content"},
	events.ToolEdit: {"path": "filePath", "file_path": "filePath", "absolute_path": "filePath", "file": "filePath",
		"old_text": "oldString", "old_str": "oldString", "new_text": "newString", "new_str": "newString"},
	events.ToolPatch:    {"path": "filePath", "file_path": "filePath", "patch_text": "patch", "patchText": "patch"},
	events.ToolGrep:     {"query": "pattern", "regex": "pattern", "dir_path": "path"},
	events.ToolGlob:     {"dir_path": "path"},
	events.ToolList:     {"dir_path": "path", "directory": "path"},
	events.ToolWebFetch: {"uri": "url"},
}

// canonicalInput renames a call's raw input to the canonical fields of
// tool (snake_case to camelCase, the aliases above), turns Bash's command
// lists and argv arrays into one command string, and fills what only the
// title or locations carry (Gemini sends no rawInput: its title is the
// command). The result is a fresh JSON object.
func canonicalInput(tool string, c *call) json.RawMessage {
	out := map[string]json.RawMessage{}
	aliases := inputAliases[events.ToolName(tool)]
	for k, v := range c.RawInput {
		name, ok := aliases[k]
		if !ok {
			name = engine.CamelCase(k)
		}
		if _, taken := out[name]; taken && name != engine.CamelCase(k) {
			continue // the field's own canonical name wins over an alias
		}
		out[name] = v
	}
	switch events.ToolName(tool) {
	case events.ToolBash:
		if cmd := commandString(out["command"]); cmd != "" {
			out["command"] = mustJSON(cmd)
		} else if c.Title != "" {
			out["command"] = mustJSON(c.Title)
		}
	case events.ToolRead, events.ToolWrite, events.ToolEdit, events.ToolPatch:
		if _, ok := out["filePath"]; !ok && len(c.Locations) > 0 {
			out["filePath"] = mustJSON(c.Locations[0])
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

// commandString reads a command given as a string, a list of commands
// (joined by newlines) or an argv (["bash","-lc","cmd"] is cmd).
func commandString(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) != nil || len(list) == 0 {
		return ""
	}
	if len(list) == 3 && (list[1] == "-lc" || list[1] == "-c") && strings.HasSuffix(list[0], "sh") {
		return list[2]
	}
	if len(list) > 1 && strings.HasPrefix(list[0], "/") {
		return strings.Join(list, " ")
	}
	return strings.Join(list, "\n")
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}
