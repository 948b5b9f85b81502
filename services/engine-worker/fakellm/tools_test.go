package fakellm

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// sch decodes a schema literal written as JSON.
func sch(t *testing.T, s string) schema {
	t.Helper()
	out := decodeSchema(json.RawMessage(s))
	if out == nil && s != "" {
		t.Fatalf("bad schema literal %s", s)
	}
	return out
}

// normalize round-trips v through JSON, so that []string and []any compare equal.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestFindTool(t *testing.T) {
	tests := []struct {
		name  string
		give  []string
		names []string
		want  string
	}{
		{"preference order beats request order", []string{"shell", "Bash"}, shellTools, "Bash"},
		{"exact beats case-insensitive", []string{"BASH", "bash"}, shellTools, "bash"},
		{"case-insensitive", []string{"Read", "EXEC_COMMAND"}, shellTools, "EXEC_COMMAND"},
		{"none", []string{"Read", "Edit"}, shellTools, ""},
		{"ask tools", []string{"question", "AskUserQuestion"}, askTools, "AskUserQuestion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var offered []tool
			for _, n := range tt.give {
				offered = append(offered, tool{name: n})
			}
			got, _ := findTool(offered, tt.names)
			if got.name != tt.want {
				t.Errorf("findTool(%v) = %q, want %q", tt.give, got.name, tt.want)
			}
		})
	}
}

func TestFindEchoTool(t *testing.T) {
	got, ok := findEchoTool([]tool{{name: "echo_local"}, {name: "mcp__probe__echo"}})
	if !ok || got.name != "mcp__probe__echo" {
		t.Errorf("findEchoTool = %q, want the MCP tool", got.name)
	}
	if _, ok := findEchoTool([]tool{{name: "Bash"}}); ok {
		t.Errorf("findEchoTool found a tool without echo in its name")
	}
}

func TestWriteArgs(t *testing.T) {
	tests := []struct {
		name    string
		give    string
		workDir string
		want    map[string]any
	}{
		{"claude Write with cwd", `{"properties":{"file_path":{},"content":{}}}`, "/ws",
			map[string]any{"file_path": "/ws/fakellm_written.txt", "content": "written by fakellm\n"}},
		{"claude Write without cwd", `{"properties":{"file_path":{},"content":{}}}`, "",
			map[string]any{"file_path": "fakellm_written.txt", "content": "written by fakellm\n"}},
		{"opencode write", `{"properties":{"filePath":{},"content":{}}}`, "/ws",
			map[string]any{"filePath": "/ws/fakellm_written.txt", "content": "written by fakellm\n"}},
		{"copilot create", `{"properties":{"path":{},"file_text":{}},"required":["path","file_text"]}`, "/ws",
			map[string]any{"path": "fakellm_written.txt", "file_text": "written by fakellm\n"}},
		{"required extra", `{"properties":{"path":{},"content":{},"overwrite":{"type":"boolean"}},"required":["overwrite"]}`, "",
			map[string]any{"path": "fakellm_written.txt", "content": "written by fakellm\n", "overwrite": false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := writeArgs(sch(t, tt.give), tt.workDir)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("writeArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAskArgs(t *testing.T) {
	alphaBeta := []any{
		map[string]any{"label": "Alpha", "description": "The first option"},
		map[string]any{"label": "Beta", "description": "The second option"},
	}
	tests := []struct {
		name string
		give string
		want any
	}{
		{"no schema: Claude's shape", ``, map[string]any{"questions": []any{map[string]any{
			"question": "Which option?", "header": "Pick", "multiSelect": false, "options": alphaBeta}}}},
		{"codex request_user_input", `{"properties":{"questions":{"type":"array","items":{"type":"object",
			"properties":{"id":{"type":"string"},"header":{"type":"string"},"question":{"type":"string"},
			"options":{"type":"array","items":{"type":"object","properties":{"label":{},"description":{}}}}},
			"required":["id","header","question"]}}},"required":["questions"]}`,
			map[string]any{"questions": []any{map[string]any{"id": "pick", "header": "Pick", "question": "Which option?", "options": alphaBeta}}}},
		{"opencode question", `{"properties":{"questions":{"type":"array","items":{"type":"object",
			"properties":{"question":{},"header":{},"multiple":{"type":"boolean"},
			"options":{"type":"array","items":{"type":"object","properties":{"label":{},"description":{}}}}}}}}}`,
			map[string]any{"questions": []any{map[string]any{"question": "Which option?", "header": "Pick", "multiple": false, "options": alphaBeta}}}},
		{"cline ask_followup_question", `{"properties":{"question":{"type":"string"},"options":{"type":"string"}},"required":["question"]}`,
			map[string]any{"question": "Which option?", "options": `["Alpha","Beta"]`}},
		{"flat with string options", `{"properties":{"question":{},"options":{"type":"array","items":{"type":"string"}}}}`,
			map[string]any{"question": "Which option?", "options": []any{"Alpha", "Beta"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s schema
			if tt.give != "" {
				s = sch(t, tt.give)
			}
			if diff := cmp.Diff(tt.want, normalize(t, askArgs(s))); diff != "" {
				t.Errorf("askArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEchoArgs(t *testing.T) {
	tests := []struct {
		name string
		give string
		want map[string]any
	}{
		{"text", `{"properties":{"text":{"type":"string"}}}`, map[string]any{"text": "hi"}},
		{"empty schema", `{}`, map[string]any{"text": "hi"}},
		{"other string", `{"properties":{"message":{"type":"string"},"n":{"type":"integer"}},"required":["message","n"]}`,
			map[string]any{"message": "hi", "n": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, echoArgs(sch(t, tt.give))); diff != "" {
				t.Errorf("echoArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShellArgsFillsRequired(t *testing.T) {
	give := `{"properties":{"command":{"type":["string","null"]},"requires_approval":{"type":"boolean"},
		"timeout":{"type":"integer","minimum":5},"mode":{"enum":["fg","bg"]},"env":{"type":"object"}},
		"required":["command","requires_approval","timeout","mode","env"]}`
	want := map[string]any{"command": shellCommand, "requires_approval": false, "timeout": float64(5), "mode": "fg", "env": map[string]any{}}
	if diff := cmp.Diff(want, shellArgs(sch(t, give))); diff != "" {
		t.Errorf("shellArgs (-want +got):\n%s", diff)
	}
}
