package fakellm

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestShellMarkerCommand(t *testing.T) {
	if got := findMarkers("run @@SH:aWQgLXU@@ please").shell; got != "id -u" {
		t.Errorf("shell = %q, want %q", got, "id -u")
	}
}

func TestFindMarkers(t *testing.T) {
	tests := []struct {
		give string
		want string
	}{
		{"hello", ""},
		{"@@THINK@@ and @@TOOL@@", "@@THINK@@ @@TOOL@@"},
		{"@@SLOW@@@@ERROR@@", "@@SLOW@@ @@ERROR@@"},
		{"@@SLOW_ERROR@@ @@RATELIMIT@@", "@@RATELIMIT@@ @@SLOW_ERROR@@"}, // neither @@SLOW@@ nor @@ERROR@@
		{"@@LONG@@", "@@TEXT:2000@@"},
		{"@@TEXT:7@@", "@@TEXT:7@@"},
		{"@@TEXT:0@@", "@@TEXT:1@@"},
		{"@@TEXT:999999999@@", "@@TEXT:100000@@"},
		{"@@TEXT:x@@ @@tool@@", ""},
		{"@@JSON_TRUNCATED@@ x @@JSON_FENCED@@", "@@JSON_FENCED@@ @@JSON_TRUNCATED@@"},
		{"@@SH:aWQgLXU@@", "@@SH@@"},
		{"@@SH:!!@@", ""}, // not base64url: no command
	}
	for _, tt := range tests {
		if got := findMarkers(tt.give).String(); got != tt.want {
			t.Errorf("findMarkers(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// kinds lists a reply's steps as "thinking", "text:<text>" and "tool:<name>".
func kinds(r reply) []string {
	var out []string
	for _, s := range r.steps {
		switch s.kind {
		case thinkingStep:
			out = append(out, "thinking")
		case textStep:
			out = append(out, "text:"+s.text())
		case toolStep:
			out = append(out, "tool:"+s.tool)
		case searchStep:
			out = append(out, "search:"+s.args)
		}
	}
	return out
}

func TestDecide(t *testing.T) {
	ok := "ok\n"
	shell := []tool{{name: "Read"}, {name: "Bash", schema: json.RawMessage(`{"properties":{"command":{}}}`)}}
	tests := []struct {
		name string
		give turn
		want []string
	}{
		{"plain", turn{user: "hi"}, []string{"text:Hello from fakellm."}},
		{"think", turn{user: "@@THINK@@"}, []string{"thinking", "text:Hello from fakellm."}},
		{"tool", turn{user: "@@TOOL@@", tools: shell}, []string{"text:Running a command.", "tool:Bash"}},
		{"write falls back to the shell", turn{user: "@@WRITE@@", tools: shell}, []string{"text:Running a command.", "tool:Bash"}},
		{"tool result", turn{user: "@@THINK@@ @@TOOL@@", tools: shell, result: &ok},
			[]string{"thinking", "text:Tool finished. Result: ok"}},
		{"no shell offered", turn{user: "@@TOOL@@", tools: []tool{{name: "Read"}}},
			[]string{"text:fakellm: no shell tool is offered (tools: Read)."}},
		{"no tools at all", turn{user: "@@ASK@@"}, []string{"text:fakellm: no ask-the-user tool is offered (tools: none)."}},
		{"mcp", turn{user: "@@MCP@@", tools: []tool{{name: "mcp__probe__echo"}}}, []string{"text:Calling the echo tool.", "tool:mcp__probe__echo"}},
		{"mcp ask_user over the agent's own ask tool", turn{user: "@@MCP_ASK@@", tools: []tool{{name: "ask_user"}, {name: "mcp__clopen__ask_user"}}},
			[]string{"text:I need to ask you something.", "tool:mcp__clopen__ask_user"}},
		{"mcp ask_user, Copilot's spelling", turn{user: "@@MCP_ASK@@", tools: []tool{{name: "clopen-ask_user"}}},
			[]string{"text:I need to ask you something.", "tool:clopen-ask_user"}},
		{"mcp ask_user in a namespace", turn{user: "@@MCP_ASK@@", tools: []tool{{name: "ask_user", namespace: "mcp__clopen__"}}},
			[]string{"text:I need to ask you something.", "tool:ask_user"}},
		{"mcp ask_user behind a tool search", turn{user: "@@MCP_ASK@@", toolSearch: true},
			[]string{"text:Searching for the ask_user tool.", `search:{"query":"ask_user","limit":8}`}},
		{"mcp ask_user not offered", turn{user: "@@MCP_ASK@@", tools: []tool{{name: "ask_user"}}},
			[]string{"text:fakellm: no MCP ask_user tool is offered (tools: ask_user)."}},
		{"json mode ignores markers", turn{user: "@@THINK@@ @@TOOL@@", tools: shell, jsonMode: true,
			jsonSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}, []string{`text:{"a":"fakellm"}`}},
		{"json mode, truncated", turn{user: "@@JSON_TRUNCATED@@", jsonMode: true,
			jsonSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)}, []string{`text:{"a":"f`}},
		{"forced tool", turn{user: "@@TOOL@@", tools: append(shell, tool{name: "StructuredOutput", schema: json.RawMessage(`{"type":"object"}`)}),
			forceTool: "StructuredOutput"}, []string{"tool:StructuredOutput"}},
		{"forced tool after its result", turn{user: "x", tools: []tool{{name: "StructuredOutput"}}, forceTool: "StructuredOutput", result: &ok},
			[]string{"text:Tool finished. Result: ok"}},
		{"forced tool not offered", turn{user: "x", forceTool: "emit"}, []string{"text:fakellm: the forced tool emit is not offered."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.give, findMarkers(tt.give.user))
			if diff := cmp.Diff(tt.want, kinds(got)); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
			if got.inputTokens < 1 || got.outputTokens < 1 {
				t.Errorf("usage = %d/%d, want at least 1 each", got.inputTokens, got.outputTokens)
			}
		})
	}
}

func TestDecideDeltas(t *testing.T) {
	r := decide(turn{user: "@@LONG@@"}, findMarkers("@@LONG@@"))
	d := r.steps[0].deltas
	if len(d) != 2000 || d[0] != "00001 " || d[1999] != "02000 " {
		t.Fatalf("@@LONG@@ gave %d deltas from %q to %q, want 2000 from 00001 to 02000", len(d), d[0], d[len(d)-1])
	}
	for _, s := range d {
		if len(s) != 6 {
			t.Fatalf("delta %q is not 6 bytes", s)
		}
	}
	if hello := decide(turn{user: "hi"}, markers{}).steps[0].deltas; len(hello) < 3 {
		t.Errorf("plain text came in %d deltas, want several", len(hello))
	}
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("é", maxResultQuote) // two bytes a rune
	got := quote("  " + long + "  ")
	if !strings.HasSuffix(got, "…") || len(got) > maxResultQuote+len("…") || !strings.HasPrefix(long, strings.TrimSuffix(got, "…")) {
		t.Errorf("quote cut badly: %d bytes", len(got))
	}
	if got := quote(" ok\n"); got != "ok" {
		t.Errorf("quote(ok) = %q, want ok", got)
	}
}

func TestPiecesAndWordsJoin(t *testing.T) {
	for _, s := range []string{"", "a", `{"command":"échø ok"}`, "Hello from fakellm.", "two  spaces "} {
		if got := strings.Join(pieces(s, 3), ""); got != s {
			t.Errorf("pieces(%q) joined = %q", s, got)
		}
		if got := strings.Join(words(s), ""); got != s {
			t.Errorf("words(%q) joined = %q", s, got)
		}
	}
}

func TestSchemaExample(t *testing.T) {
	tests := []struct {
		name string
		give string
		want any
	}{
		{"gemini router", `{"type":"OBJECT","properties":{"complexity_reasoning":{"type":"STRING"},"complexity_score":{"type":"INTEGER"}}}`,
			map[string]any{"complexity_reasoning": "fakellm", "complexity_score": float64(1)}},
		{"enum and nesting", `{"type":"object","properties":{"who":{"type":"string","enum":["user","model"]},
			"list":{"type":"array","items":{"type":"object","properties":{"ok":{"type":"boolean"},"x":{"type":"number"}}}}}}`,
			map[string]any{"who": "user", "list": []any{map[string]any{"ok": true, "x": float64(1)}}}},
		{"nullable type list", `{"type":["null","string"]}`, "fakellm"},
		{"anyOf", `{"anyOf":[{"type":"integer"},{"type":"string"}]}`, float64(1)},
		{"no schema", ``, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := normalize(t, decodeSchema(json.RawMessage(tt.give)).example(0))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("example (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPromptSchema(t *testing.T) {
	tests := []struct {
		give string
		want string // "" when the turn quotes no schema
	}{
		{"Match this JSON schema:\n```json\n{\"type\":\"object\"}\n```", `{"type":"object"}`},
		{"json SCHEMA below\n```json\n{\"properties\":{}}\n```", `{"properties":{}}`},
		{"Match this JSON schema:\n```json\n[1]\n```", ""},
		{"Match this JSON schema:\n```json\n{\"a\":1}\n```", ""},
		{"```json\n{\"type\":\"object\"}\n``` is a JSON schema", ""},
		{"no schema here", ""},
	}
	for _, tt := range tests {
		got, ok := promptSchema(tt.give)
		if string(got) != tt.want || ok != (tt.want != "") {
			t.Errorf("promptSchema(%q) = %s, %v; want %s", tt.give, got, ok, tt.want)
		}
	}
}

func TestParseJSONRequests(t *testing.T) {
	tests := []struct {
		name      string
		parse     func([]byte) (turn, error)
		give      string
		wantJSON  bool
		wantForce string
	}{
		{"anthropic StructuredOutput", parseAnthropic, `{"tools":[{"name":"Bash"},{"name":"StructuredOutput"}]}`, false, "StructuredOutput"},
		{"anthropic tool_choice wins", parseAnthropic, `{"tools":[{"name":"StructuredOutput"}],"tool_choice":{"type":"tool","name":"emit"}}`, false, "emit"},
		{"anthropic tool_choice auto", parseAnthropic, `{"tools":[{"name":"Bash"}],"tool_choice":{"type":"auto"}}`, false, ""},
		{"anthropic output_format", parseAnthropic, `{"output_format":{"type":"json_schema","schema":{}}}`, true, ""},
		{"anthropic output_config without a format", parseAnthropic, `{"output_config":{"effort":"low"}}`, false, ""},
		{"chat json_schema", parseChat, `{"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, true, ""},
		{"chat text", parseChat, `{"response_format":{"type":"text"}}`, false, ""},
		{"responses json_schema", parseResponses, `{"text":{"format":{"type":"json_schema","schema":{}}}}`, true, ""},
		{"responses plain", parseResponses, `{"text":{"verbosity":"low"}}`, false, ""},
	}
	for _, tt := range tests {
		got, err := tt.parse([]byte(tt.give))
		if err != nil || got.jsonMode != tt.wantJSON || got.forceTool != tt.wantForce {
			t.Errorf("%s: jsonMode %v forceTool %q, %v; want %v %q", tt.name, got.jsonMode, got.forceTool, err, tt.wantJSON, tt.wantForce)
		}
	}
}
