package acp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/acp"
)

func decodeUpdate(t *testing.T, raw string) acp.Update {
	t.Helper()
	u, err := acp.DecodeUpdate(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return u
}

// kindsOf lists output types (stream events with their kind, tool uses
// with their name), for compact comparisons.
func kindsOf(outs []events.Output) []string {
	var k []string
	for _, o := range outs {
		switch o := o.(type) {
		case events.StreamEvent:
			k = append(k, "stream:"+string(o.Event))
		case events.AssistantMessage:
			s := "assistant"
			for _, b := range o.Content {
				switch b := b.(type) {
				case events.TextBlock:
					s += ":" + b.Text
				case events.ToolUseBlock:
					s += ":" + b.Name + string(b.Input)
				}
			}
			k = append(k, s)
		case events.UserMessage:
			tr := o.Content[0].(events.ToolResultBlock)
			k = append(k, "result:"+tr.Content+map[bool]string{true: ":error"}[tr.IsError])
		case events.ReasoningMessage:
			k = append(k, "reasoning:"+o.Text)
		case events.Result:
			k = append(k, "result:"+string(o.Subtype)+":"+strings.Join(o.Errors, ","))
		case events.Notification:
			k = append(k, "notification:"+string(o.Level)+":"+o.Message)
		default:
			k = append(k, o.OutputType())
		}
	}
	return k
}

func TestConverter(t *testing.T) {
	chunk := func(kind, text, msgID string) string {
		return `{"sessionUpdate":"` + kind + `","messageId":"` + msgID + `","content":{"type":"text","text":"` + text + `"}}`
	}
	tests := []struct {
		name    string
		profile *acp.Profile
		give    []string // updates; "END:<stopReason>" ends the turn
		want    []string
	}{
		{"text then thought then text: one message per block", &acp.Gemini,
			[]string{chunk("agent_message_chunk", "Hel", ""), chunk("agent_message_chunk", "lo", ""), chunk("agent_thought_chunk", "hm", ""),
				chunk("agent_message_chunk", "Bye", ""), "END:end_turn"},
			[]string{"stream:start", "stream:delta", "stream:delta", "stream:stop", "assistant:Hello", "stream:start", "stream:delta",
				"stream:stop", "reasoning:hm", "stream:start", "stream:delta", "stream:stop", "assistant:Bye", "result:success:"}},
		{"a new agent message id starts a new message", &acp.OpenCode,
			[]string{chunk("agent_message_chunk", "A", "m1"), chunk("agent_message_chunk", "B", "m2"), "END:end_turn"},
			[]string{"stream:start", "stream:delta", "stream:stop", "assistant:A", "stream:start", "stream:delta", "stream:stop", "assistant:B",
				"result:success:"}},
		{"a call announced without its input waits for it (OpenCode)", &acp.OpenCode,
			[]string{`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"bash","kind":"execute","status":"pending","rawInput":{"cwd":"/w"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress","title":"echo hi","rawInput":{"command":"echo hi","cwd":"/w"}}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"hi\n"}}]}`,
				"END:end_turn"},
			[]string{`assistant:Bash{"command":"echo hi","cwd":"/w"}`, "result:hi\n", "result:success:"}},
		{"an update before the call (Cline), commands joined", &acp.Cline,
			[]string{`{"sessionUpdate":"tool_call_update","toolCallId":"c1","title":"run_commands: ls","kind":"execute","status":"pending","rawInput":{"commands":["ls","pwd"]}}`,
				`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"run_commands: ls","kind":"execute","status":"pending"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"failed","rawOutput":[{"query":"ls","result":"boom"}]}`,
				"END:end_turn"},
			[]string{`assistant:Bash{"command":"ls\npwd"}`, `result:[{"query":"ls","result":"boom"}]:error`, "result:success:"}},
		{"Gemini: the name is the id's prefix, the command the title", &acp.Gemini,
			[]string{`{"sessionUpdate":"tool_call_update","toolCallId":"run_shell_command__1","status":"completed","title":"ls -l","kind":"execute","content":[]}`,
				"END:end_turn"},
			[]string{`assistant:Bash{"command":"ls -l"}`, "result:", "result:success:"}},
		{"Qwen: the name in _meta; a write is Write", &acp.Qwen,
			[]string{`{"sessionUpdate":"tool_call","toolCallId":"c1","status":"in_progress","kind":"edit","rawInput":{"file_path":"/w/a","content":"x"},"_meta":{"toolName":"write_file"}}`,
				"END:end_turn"},
			[]string{`assistant:Write{"content":"x","filePath":"/w/a"}`, "result:success:"}},
		{"a plan is TodoWrite", &acp.Qwen,
			[]string{`{"sessionUpdate":"plan","entries":[{"content":"a","status":"inProgress"},{"content":"b","status":"cancelled"}]}`, "END:end_turn"},
			[]string{`assistant:TodoWrite{"todos":[{"content":"a","status":"in_progress","activeForm":"a"},{"content":"b","status":"completed","activeForm":"b"}]}`,
				"result:Plan updated", "result:success:"}},
		{"Copilot's error notice fails the turn", &acp.Copilot,
			[]string{chunk("agent_message_chunk", "Info: Retrying...", ""), chunk("agent_message_chunk", "Error: 500 boom", ""), "END:end_turn"},
			[]string{"notification:info:Retrying...", "notification:error:500 boom", "result:error_during_execution:500 boom"}},
		{"harness tools are dropped on both sides (Copilot)", &acp.Copilot,
			[]string{`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"report_intent","kind":"other","status":"in_progress"}`,
				`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","rawOutput":"ok"}`, "END:end_turn"},
			[]string{"result:success:"}},
		{"max_tokens keeps the stop reason", &acp.Gemini,
			[]string{chunk("agent_message_chunk", "cut", ""), "END:max_tokens"},
			[]string{"stream:start", "stream:delta", "stream:stop", "assistant:cut", "result:success:"}},
		{"cancelled is interrupted", &acp.Gemini, []string{"END:cancelled"}, []string{"result:error_during_execution:Interrupted by user"}},
		{"refusal fails", &acp.Gemini, []string{"END:refusal"}, []string{"result:error_during_execution:The agent refused to continue"}},
		{"max_turn_requests", &acp.Gemini, []string{"END:max_turn_requests"},
			[]string{"result:error_max_turns:The agent reached its limit of model requests for one turn"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &acp.Converter{Profile: tt.profile, SessionID: "s", Base: "b", Now: fixedNow}
			var outs []events.Output
			for _, g := range tt.give {
				if stop, ok := strings.CutPrefix(g, "END:"); ok {
					outs = append(outs, c.End(acp.PromptResponse{StopReason: stop})...)
					continue
				}
				outs = append(outs, c.Update(decodeUpdate(t, g))...)
			}
			if diff := cmp.Diff(tt.want, kindsOf(outs)); diff != "" {
				t.Errorf("outputs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestResultUsage: the turn's usage comes from the prompt response, else
// Gemini's _meta.quota, else Qwen's per-call _meta.usage; the cost is the
// session's running cost less what it was before the turn.
func TestResultUsage(t *testing.T) {
	tests := []struct {
		name     string
		updates  []string
		response string
		want     events.TokenUsage
		wantCost float64
	}{
		{"prompt response", nil, `{"stopReason":"end_turn","usage":{"inputTokens":10,"outputTokens":5,"cachedReadTokens":2}}`,
			events.TokenUsage{InputTokens: 10, OutputTokens: 5, CacheReadInputTokens: 2}, 0},
		{"gemini quota", nil, `{"stopReason":"end_turn","_meta":{"quota":{"token_count":{"input_tokens":7,"output_tokens":3}}}}`,
			events.TokenUsage{InputTokens: 7, OutputTokens: 3}, 0},
		{"qwen chunks", []string{`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":10,"outputTokens":5}}}`,
			`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""},"_meta":{"usage":{"inputTokens":20,"outputTokens":6}}}`},
			`{"stopReason":"end_turn"}`, events.TokenUsage{InputTokens: 30, OutputTokens: 11}, 0},
		{"cost delta", []string{`{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":0.75,"currency":"USD"}}`},
			`{"stopReason":"end_turn","usage":{"inputTokens":1,"outputTokens":1}}`, events.TokenUsage{InputTokens: 1, OutputTokens: 1}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &acp.Converter{Profile: &acp.Qwen, SessionID: "s", Base: "b", CostBase: 0.25}
			for _, u := range tt.updates {
				c.Update(decodeUpdate(t, u))
			}
			var r acp.PromptResponse
			must(t, json.Unmarshal([]byte(tt.response), &r))
			outs := c.End(r)
			res := outs[len(outs)-1].(events.Result)
			if res.Usage != tt.want || res.TotalCostUSD != tt.wantCost {
				t.Errorf("End(%s) usage = %+v cost %v, want %+v cost %v", tt.response, res.Usage, res.TotalCostUSD, tt.want, tt.wantCost)
			}
		})
	}
}
