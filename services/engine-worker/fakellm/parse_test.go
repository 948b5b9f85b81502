package fakellm

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// parsed is the part of a turn the answer depends on, in comparable form.
type parsed struct {
	User   string
	Result string // "-" when no tool result follows the user turn
	Tools  []string
}

func summarize(t turn) parsed {
	p := parsed{User: t.user, Result: "-", Tools: t.toolNames()}
	if t.result != nil {
		p.Result = *t.result
	}
	return p
}

func TestParseAnthropic(t *testing.T) {
	tests := []struct {
		name string
		give string
		want parsed
	}{
		{"string content", `{"messages":[{"role":"user","content":"hi @@TOOL@@"}],"tools":[{"name":"Bash","input_schema":{}}]}`,
			parsed{"hi @@TOOL@@", "-", []string{"Bash"}}},
		{"last text block, reminders skipped", `{"messages":[{"role":"user","content":[
			{"type":"text","text":"old @@SLOW@@"},{"type":"text","text":"new"},{"type":"text","text":"<system-reminder>x</system-reminder>"}]}]}`,
			parsed{"new", "-", []string{}}},
		{"tool result after the turn", `{"messages":[{"role":"user","content":"@@TOOL@@"},
			{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":"ok"}]}]}]}`,
			parsed{"@@TOOL@@", "ok", []string{}}},
		{"a new turn clears the result", `{"messages":[{"role":"user","content":"a"},
			{"role":"user","content":[{"type":"tool_result","content":"ok"}]},{"role":"user","content":"b"}]}`,
			parsed{"b", "-", []string{}}},
		{"assistant text is not a turn", `{"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"@@ERROR@@"}]}`,
			parsed{"a", "-", []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseAnthropic([]byte(tt.give))
			if err != nil {
				t.Fatalf("parseAnthropic: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("parseAnthropic (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseChat(t *testing.T) {
	tests := []struct {
		name string
		give string
		want parsed
	}{
		{"parts content", `{"messages":[{"role":"system","content":"@@ERROR@@"},{"role":"user","content":[{"type":"text","text":"@@TOOL@@"}]}],
			"tools":[{"type":"function","function":{"name":"bash","parameters":{}}}]}`,
			parsed{"@@TOOL@@", "-", []string{"bash"}}},
		{"tool message", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[]},{"role":"tool","content":"ok\n"}]}`,
			parsed{"x", "ok\n", []string{}}},
		{"flat tool", `{"messages":[],"tools":[{"type":"function","name":"shell"}]}`, parsed{"", "-", []string{"shell"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseChat([]byte(tt.give))
			if err != nil {
				t.Fatalf("parseChat: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("parseChat (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseResponses(t *testing.T) {
	tests := []struct {
		name string
		give string
		want parsed
	}{
		{"string input", `{"input":"hi"}`, parsed{"hi", "-", []string{}}},
		{"items", `{"input":[{"type":"message","role":"developer","content":"@@ERROR@@"},
			{"role":"user","content":[{"type":"input_text","text":"@@TOOL@@"}]},
			{"type":"function_call","call_id":"c","name":"exec_command","arguments":"{}"},
			{"type":"function_call_output","call_id":"c","output":"ok"}],
			"tools":[{"type":"function","name":"exec_command","parameters":{}},{"type":"custom","name":"apply_patch"},{"type":"web_search"}]}`,
			parsed{"@@TOOL@@", "ok", []string{"exec_command"}}},
		{"output as content list", `{"input":[{"role":"user","content":"x"},{"type":"function_call_output","output":[{"type":"input_text","text":"done"}]}]}`,
			parsed{"x", "done", []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseResponses([]byte(tt.give))
			if err != nil {
				t.Fatalf("parseResponses: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("parseResponses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseGemini(t *testing.T) {
	tests := []struct {
		name string
		give string
		want parsed
	}{
		{"text parts", `{"contents":[{"role":"user","parts":[{"text":"a"},{"text":"@@TOOL@@"}]}],
			"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{}}]}]}`,
			parsed{"a\n@@TOOL@@", "-", []string{"run_shell_command"}}},
		{"function response", `{"contents":[{"role":"user","parts":[{"text":"x"}]},
			{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok\n"}}}]}]}`,
			parsed{"x", "ok\n", []string{}}},
		{"other response shape", `{"contents":[{"parts":[{"text":"x"}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"n":1}}}]}]}`,
			parsed{"x", `{"n":1}`, []string{}}},
		{"thoughts are not the turn", `{"contents":[{"role":"user","parts":[{"text":"x"},{"text":"@@ERROR@@","thought":true}]}]}`,
			parsed{"x", "-", []string{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseGemini([]byte(tt.give))
			if err != nil {
				t.Fatalf("parseGemini: %v", err)
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("parseGemini (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrorsNameTheProblem(t *testing.T) {
	tests := []struct {
		name  string
		parse func([]byte) (turn, error)
		give  string
		want  string
	}{
		{"anthropic syntax", parseAnthropic, `{`, "parse anthropic request: unexpected end of JSON input"},
		{"anthropic type", parseAnthropic, `{"messages":5}`, "messages"},
		{"chat type", parseChat, `{"stream":"yes"}`, "stream"},
		{"responses input", parseResponses, `{"input":5}`, "want a string or a list of items"},
		{"gemini type", parseGemini, `{"contents":{}}`, "contents"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.parse([]byte(tt.give))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("parse(%s) = %v, want an error containing %q", tt.give, err, tt.want)
			}
		})
	}
}
