package acp

import (
	"encoding/json"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

// TestRedact: the account's key never leaves in an output, whatever
// carries it; placeholders and short values are not secrets.
func TestRedact(t *testing.T) {
	key := "sk-live-0123456789abcdef"
	sec := secrets(Credential{APIKey: key})
	tests := []struct {
		name string
		give events.Output
	}{
		{"delta", events.StreamEvent{Event: events.StreamDelta, Text: "key=" + key}},
		{"reasoning", events.ReasoningMessage{Text: key}},
		{"text", events.AssistantMessage{Content: []events.Block{events.TextBlock{Text: "a " + key + " b"}}}},
		{"tool input", events.AssistantMessage{Content: []events.Block{events.ToolUseBlock{ID: "1", Name: "Bash",
			Input: json.RawMessage(`{"command":"echo ` + key + `"}`)}}}},
		{"tool result", events.UserMessage{Content: []events.Block{events.ToolResultBlock{ToolUseID: "1", Content: key}}}},
		{"result", events.Result{Subtype: events.ResultErrorDuringExecution, Errors: []string{"bad key " + key}}},
		{"notification", events.Notification{Level: events.LevelError, Title: "t", Message: key}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := events.EncodeOutput(redact(tt.give, sec))
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), key) || !strings.Contains(string(b), redacted) {
				t.Errorf("redact(%s) = %s, want the key blanked out", tt.name, b)
			}
		})
	}
	for _, c := range []Credential{{APIKey: PlaceholderKey}, {APIKey: CopilotPlaceholderKey}, {APIKey: "short"}} {
		if s := secrets(c); s != nil {
			t.Errorf("secrets(%q) = %q, want none", c.APIKey, s)
		}
	}
}
