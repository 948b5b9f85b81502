package fakellm_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"clopen.dev/services/engine-worker/fakellm"
)

// messageSchema is what a commit-message generator asks for.
var messageSchema = map[string]any{"type": "object", "required": []any{"message", "kind"},
	"properties": map[string]any{"message": map[string]any{"type": "string"},
		"kind": map[string]any{"enum": []any{"fix", "feat"}}, "files": map[string]any{"type": "array", "items": map[string]any{"type": "integer"}}}}

const messageDoc = `{"files":[1],"kind":"fix","message":"fakellm"}`

// TestAnthropicStructuredOutputTool: Claude Code's --json-schema offers a
// StructuredOutput tool (as the pinned CLI sends it, no tool_choice); the
// answer calls it with arguments that fit its schema.
func TestAnthropicStructuredOutputTool(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	msg, _, err := anthropicStream(testContext(t), t, newAnthropic(f),
		anthropicParams("@@TOOL@@ Write a commit message.", anthropicTool("StructuredOutput", messageSchema)))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Type != "tool_use" || msg.Content[0].Name != "StructuredOutput" ||
		string(msg.Content[0].Input) != messageDoc || msg.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("answer = %+v (stop %s), want one StructuredOutput call with %s", msg.Content, msg.StopReason, messageDoc)
	}
}

// TestAnthropicForcedTool: tool_choice {"type":"tool"} is obeyed.
func TestAnthropicForcedTool(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	params := anthropicParams("Say hello.", anthropicTool("Bash", claudeBash), anthropicTool("emit", messageSchema))
	params.ToolChoice = anthropic.ToolChoiceParamOfTool("emit")
	msg, _, err := anthropicStream(testContext(t), t, newAnthropic(f), params)
	if err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Name != "emit" || string(msg.Content[0].Input) != messageDoc {
		t.Errorf("answer = %+v, want one emit call with %s", msg.Content, messageDoc)
	}
}

func TestChatResponseFormat(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	params := chatParams("Write a commit message.")
	params.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "commit", Schema: messageSchema}}}
	run, err := chatStream(testContext(t), t, newOpenAI(f), params)
	if err != nil || len(run.acc.Choices) == 0 || run.acc.Choices[0].Message.Content != messageDoc {
		t.Errorf("streamed answer = %+v, %v; want %s", run.acc.Choices, err, messageDoc)
	}
}

// postJSON sends body to path and returns the decoded JSON answer.
func postJSON(t *testing.T, f *fixture, path, body string) map[string]any {
	t.Helper()
	status, b := post(t, f, path, body)
	var out map[string]any
	if status != http.StatusOK || json.Unmarshal([]byte(b), &out) != nil {
		t.Fatalf("POST %s = %d %s", path, status, b)
	}
	return out
}

// TestJSONFormats: every API's way of asking for JSON gets a document that
// fits the schema, as text, in the API's own answer shape.
func TestJSONFormats(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	schema, _ := json.Marshal(messageSchema)
	user := `"messages":[{"role":"user","content":"@@THINK@@ Write a commit message."}]`
	text := func(path, body string, get func(map[string]any) any) string {
		s, _ := get(postJSON(t, f, path, body)).(string)
		return s
	}
	anthropicText := func(m map[string]any) any { return m["content"].([]any)[0].(map[string]any)["text"] }
	chatText := func(m map[string]any) any {
		return m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	}
	responsesText := func(m map[string]any) any {
		for _, it := range m["output"].([]any) {
			if it.(map[string]any)["type"] == "message" {
				return it.(map[string]any)["content"].([]any)[0].(map[string]any)["text"]
			}
		}
		return nil
	}
	tests := []struct{ name, path, body, want string }{
		{"anthropic output_format", "/v1/messages", `{"model":"m",` + user + `,"output_format":{"type":"json_schema","schema":` + string(schema) + `}}`, messageDoc},
		{"anthropic output_config.format", "/v1/messages", `{"model":"m",` + user + `,"output_config":{"effort":"low","format":{"type":"json_schema","schema":` + string(schema) + `}}}`, messageDoc},
		{"chat json_object", "/v1/chat/completions", `{"model":"m",` + user + `,"response_format":{"type":"json_object"}}`, `{}`},
		{"responses text.format", "/v1/responses", `{"model":"m","input":"Write a commit message.","text":{"format":{"type":"json_schema","name":"c","schema":` + string(schema) + `}}}`, messageDoc},
	}
	for _, tt := range tests {
		get := anthropicText
		switch {
		case strings.Contains(tt.path, "chat"):
			get = chatText
		case strings.Contains(tt.path, "responses"):
			get = responsesText
		}
		if got := text(tt.path, tt.body, get); got != tt.want {
			t.Errorf("%s: text = %q, want %s", tt.name, got, tt.want)
		}
	}
}

// TestJSONFromPrompt: a plain turn that quotes a JSON schema to answer with
// (structured generation without a native JSON mode) is answered with a
// fitting document; @@JSON_FENCED@@ and @@JSON_TRUNCATED@@ spoil it the ways
// models do.
func TestJSONFromPrompt(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	schema, _ := json.Marshal(messageSchema)
	tests := []struct{ markers, want string }{
		{"", messageDoc},
		{"@@JSON_FENCED@@", "Here is the JSON you asked for:\n```json\n" + messageDoc + "\n```\nLet me know if you need changes."},
		{"@@JSON_TRUNCATED@@", messageDoc[:len(messageDoc)/2]},
		{"@@JSON_FENCED@@ @@JSON_TRUNCATED@@", "Here is the JSON you asked for:\n```json\n" + messageDoc[:len(messageDoc)/2] + "\n```\nLet me know if you need changes."},
	}
	for _, tt := range tests {
		prompt := tt.markers + " Write a commit message.\n\nAnswer with one JSON document. It must match this JSON schema:\n```json\n" + string(schema) + "\n```"
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": prompt}}})
		out := postJSON(t, f, "/v1/chat/completions", string(body))
		got := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
		if got != tt.want {
			t.Errorf("%q: answer = %q, want %q", tt.markers, got, tt.want)
		}
	}
	// Without the words "JSON schema" a fenced object is just a prompt.
	body := `{"model":"m","messages":[{"role":"user","content":"Look at this:\n` + "```json" + `\n{\"type\":\"object\"}\n` + "```" + `"}]}`
	out := postJSON(t, f, "/v1/chat/completions", body)
	if got := out["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]; got != "Hello from fakellm." {
		t.Errorf("a fenced object without a schema request = %q, want the usual hello", got)
	}
}
