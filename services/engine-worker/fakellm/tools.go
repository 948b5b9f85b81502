package fakellm

import (
	"path"
	"strings"
)

// shellCommand is what @@TOOL@@ runs; its output "ok" comes back as the tool result.
const shellCommand = "echo fakellm-tool-ran > fakellm_out.txt && echo ok"

// writtenFile and writtenContent are what @@WRITE@@ writes.
const (
	writtenFile    = "fakellm_written.txt"
	writtenContent = "written by fakellm\n"
)

// Tool names per purpose, in order of preference. Matching is exact first,
// then case-insensitive.
var (
	shellTools = []string{"Bash", "bash", "shell", "exec_command", "shell_command", "run_shell_command",
		"run_command", "run_commands", "execute_command", "execute", "terminal", "run_in_terminal"}
	writeTools = []string{"Write", "write", "write_file", "create_file", "write_to_file", "create", "writeFile"}
	askTools   = []string{"AskUserQuestion", "ask_user_question", "request_user_input", "ask_user",
		"question", "ask_followup_question", "ask_question", "askUser"}
)

// findTool returns the first offered tool whose name is in names.
func findTool(offered []tool, names []string) (tool, bool) {
	for _, fold := range []bool{false, true} {
		for _, n := range names {
			for _, t := range offered {
				if t.name == n || fold && strings.EqualFold(t.name, n) {
					return t, true
				}
			}
		}
	}
	return tool{}, false
}

// findMCPTool returns the offered MCP tool named name: mcp__<server>__name
// or another engine's spelling of it (mcp_<server>_name, <server>-name, or
// name in an MCP server's namespace, as a Codex tool search loads it).
func findMCPTool(offered []tool, name string) (tool, bool) {
	for _, t := range offered {
		lower := strings.ToLower(t.name)
		if strings.HasSuffix(lower, "_"+name) || strings.HasSuffix(lower, "-"+name) ||
			lower == name && strings.HasPrefix(strings.ToLower(t.namespace), "mcp") {
			return t, true
		}
	}
	return tool{}, false
}

// findMCPAsk finds the MCP tool named ask_user, or ask_question: the name
// Clopen's bridge gives it for Gemini CLI, which hides any tool named like
// its own ask_user.
func findMCPAsk(offered []tool) (tool, bool) {
	if t, ok := findMCPTool(offered, "ask_user"); ok {
		return t, true
	}
	return findMCPTool(offered, "ask_question")
}

// findEchoTool prefers an MCP tool (mcp__server__echo) over any other tool
// whose name contains "echo".
func findEchoTool(offered []tool) (tool, bool) {
	var fallback *tool
	for i, t := range offered {
		lower := strings.ToLower(t.name)
		if !strings.Contains(lower, "echo") {
			continue
		}
		if strings.HasPrefix(lower, "mcp") || strings.HasPrefix(strings.ToLower(t.namespace), "mcp") {
			return t, true
		}
		if fallback == nil {
			fallback = &offered[i]
		}
	}
	if fallback != nil {
		return *fallback, true
	}
	return tool{}, false
}

// shellArgs shapes a call of shellCommand for the tool's schema: cmd (Codex),
// commands[] (Cline), command as an argv array, or command as a string.
func shellArgs(s schema) map[string]any { return shellArgsFor(s, shellCommand) }

// shellArgsFor shapes a call of command for the tool's schema.
func shellArgsFor(s schema, shellCommand string) map[string]any {
	args := map[string]any{}
	switch {
	case s.has("cmd"):
		args["cmd"] = shellCommand
	case s.has("commands"):
		if s.prop("commands").kind() == "string" {
			args["commands"] = shellCommand
		} else {
			args["commands"] = []string{shellCommand}
		}
	case s.prop("command").kind() == "array":
		args["command"] = []string{"bash", "-lc", shellCommand}
	default:
		args["command"] = shellCommand
	}
	// Friendly values for fields that permission prompts show or that some
	// tools require (Gemini's is_background, Cline's requires_approval).
	if s.has("description") {
		args["description"] = "Write a marker file"
	}
	for _, name := range []string{"is_background", "run_in_background", "requires_approval"} {
		if s.prop(name).kind() == "boolean" {
			args[name] = false
		}
	}
	s.fillRequired(args, 0)
	return args
}

// writeArgs shapes a write of writtenFile. Keys named like file_path want an
// absolute path, which needs the agent's working directory from the prompt.
func writeArgs(s schema, workDir string) map[string]any {
	pathKey := "file_path"
	for _, k := range []string{"file_path", "filePath", "path", "absolute_path", "filename", "file"} {
		if s.has(k) {
			pathKey = k
			break
		}
	}
	p := writtenFile
	if workDir != "" && (pathKey == "file_path" || pathKey == "absolute_path" || pathKey == "filePath") {
		p = path.Join(workDir, writtenFile)
	}
	contentKey := "content"
	for _, k := range []string{"content", "file_text", "contents", "text"} {
		if s.has(k) {
			contentKey = k
			break
		}
	}
	args := map[string]any{pathKey: p, contentKey: writtenContent}
	s.fillRequired(args, 0)
	return args
}

// askArgs shapes one question, "Which option?" with options Alpha and Beta,
// either as a questions[] list (Claude, Codex, OpenCode) or flat (Cline).
func askArgs(s schema) map[string]any {
	if len(s.props()) == 0 {
		return map[string]any{"questions": []any{question(nil)}}
	}
	if s.has("questions") {
		args := map[string]any{"questions": []any{question(s.prop("questions").items())}}
		s.fillRequired(args, 0)
		return args
	}
	return question(s)
}

func question(s schema) map[string]any {
	q := map[string]any{"question": "Which option?", "header": "Pick"}
	opts := s.prop("options")
	switch {
	case s == nil || opts == nil && !s.has("options"):
		q["options"] = []any{option(nil, "Alpha", "The first option"), option(nil, "Beta", "The second option")}
		if s == nil {
			q["multiSelect"] = false
		}
	case opts.kind() == "string":
		q["options"] = `["Alpha","Beta"]`
	case opts.items().kind() == "string":
		q["options"] = []any{"Alpha", "Beta"}
	default:
		it := opts.items()
		q["options"] = []any{option(it, "Alpha", "The first option"), option(it, "Beta", "The second option")}
	}
	for _, name := range []string{"multiSelect", "multiple", "multi_select", "allow_multiple"} {
		if s.prop(name).kind() == "boolean" {
			q[name] = false
		}
	}
	if s.has("id") {
		q["id"] = "pick"
	}
	if s != nil && !s.has("header") {
		delete(q, "header")
	}
	s.fillRequired(q, 1)
	return q
}

func option(s schema, label, description string) map[string]any {
	o := map[string]any{"label": label}
	if s == nil || s.has("description") {
		o["description"] = description
	}
	s.fillRequired(o, 2)
	return o
}

// echoArgs is {"text":"hi"}, or "hi" in the schema's first required string
// when the tool has no text argument.
func echoArgs(s schema) map[string]any {
	args := map[string]any{}
	if len(s.props()) == 0 || s.has("text") {
		args["text"] = "hi"
	} else {
		for _, name := range s.required() {
			if s.prop(name).kind() == "string" {
				args[name] = "hi"
				break
			}
		}
	}
	s.fillRequired(args, 0)
	return args
}
