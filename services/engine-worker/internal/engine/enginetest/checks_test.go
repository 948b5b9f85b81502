package enginetest

import (
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

func TestCheckTurn(t *testing.T) {
	base := func(id string) events.MessageBase {
		return events.MessageBase{CreatedAt: time.Unix(0, 0), MessageID: id, SessionID: "s", Engine: events.MessageEngine{Type: events.EngineClaudeCode}}
	}
	init := events.SystemInit{SessionID: "s", Engine: events.EngineClaudeCode}
	start := events.StreamEvent{Event: events.StreamStart, SessionID: "s"}
	delta := events.StreamEvent{Event: events.StreamDelta, SessionID: "s", Text: "x"}
	stop := events.StreamEvent{Event: events.StreamStop, SessionID: "s"}
	thinkStart := events.StreamEvent{Event: events.StreamStart, SessionID: "s", Reasoning: true}
	text := events.AssistantMessage{MessageBase: base("a"), Content: []events.Block{events.TextBlock{Text: "x"}}}
	call := func(id, tool string) events.AssistantMessage {
		return events.AssistantMessage{MessageBase: base("m-" + tool), StopReason: events.StopToolUse,
			Content: []events.Block{events.ToolUseBlock{ID: tool, Name: "Bash", Input: []byte(`{}`)}}}
	}
	result := func(id, parent string) events.UserMessage {
		u := events.UserMessage{MessageBase: base(id), Synthetic: true, Content: []events.Block{events.ToolResultBlock{ToolUseID: "t1"}}}
		u.Parent.ToolUseID = parent
		return u
	}
	done := events.Result{Subtype: events.ResultSuccess, SessionID: "s"}
	tests := []struct {
		name     string
		give     []events.Output
		complete bool
		want     string // a substring of the first error; "" for none
	}{
		{"a good turn", []events.Output{init, start, delta, stop, text, call("c", "t1"), result("r", ""), done}, true, ""},
		{"no system_init first", []events.Output{start, delta, stop, text, done}, true, "want system_init"},
		{"no result", []events.Output{init, text}, true, "0 results"},
		{"cancelled turns may stop anywhere", []events.Output{init, start, delta}, false, ""},
		{"overlapping streams", []events.Output{init, thinkStart, start, stop, done}, true, "while a stream is open"},
		{"delta outside a stream", []events.Output{init, delta, done}, true, "outside its stream"},
		{"message inside its stream", []events.Output{init, start, delta, text, stop, done}, true, "while a stream is open"},
		{"two tool uses", []events.Output{init, events.AssistantMessage{MessageBase: base("x"), Content: []events.Block{
			events.ToolUseBlock{ID: "1", Name: "Bash"}, events.ToolUseBlock{ID: "2", Name: "Bash"}}}, done}, true, "2 tool_use blocks"},
		{"result carrier tagged with its call", []events.Output{init, call("c", "t1"), result("r", "t1"), done}, true, "parent.toolUseId"},
		{"result without a call", []events.Output{init, result("r", ""), done}, true, "no earlier tool_use"},
		{"duplicate ids", []events.Output{init, text, text, done}, true, "duplicate message id"},
		{"result in the middle", []events.Output{init, done, text, done}, true, "before the end"},
	}
	for _, tt := range tests {
		errs := CheckTurn(events.EngineClaudeCode, tt.give, tt.complete)
		switch {
		case tt.want == "" && len(errs) > 0:
			t.Errorf("%s: CheckTurn = %v, want no errors", tt.name, errs)
		case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs[0].Error(), tt.want)):
			t.Errorf("%s: CheckTurn = %v, want an error containing %q", tt.name, errs, tt.want)
		}
	}
}
