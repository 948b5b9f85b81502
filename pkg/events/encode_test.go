package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestJSONMarshalEmitsType(t *testing.T) {
	msg := goldenOutputs["assistant"].(AssistantMessage)
	for _, give := range []any{msg, &msg, []Output{msg}} {
		b, err := json.Marshal(give)
		if err != nil {
			t.Fatalf("json.Marshal(%T): %v", give, err)
		}
		if !bytes.Contains(b, []byte(`"type":"assistant"`)) {
			t.Errorf("json.Marshal(%T) = %s, want a type discriminator", give, b)
		}
	}
	// The golden message's tool input has "2>&1", which json.Marshal
	// escapes inside the raw input; the child message has no such text, so
	// json.Marshal and json.Unmarshal give it back exactly.
	child := goldenOutputs["assistant_child"].(AssistantMessage)
	var back AssistantMessage
	b, _ := json.Marshal(child)
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, child) {
		t.Errorf("json.Unmarshal(json.Marshal(child)) = %+v, %v; want the message back", back, err)
	}
}

func TestUnknownFieldsAreIgnored(t *testing.T) {
	give := `{"type":"reasoning","text":"x","futureField":{"a":1},"sessionId":null,"parent":{"messageId":null,"extra":1}}`
	o, err := DecodeOutput([]byte(give))
	if err != nil {
		t.Fatal(err)
	}
	want := ReasoningMessage{Text: "x"}
	if !reflect.DeepEqual(o, want) {
		t.Errorf("DecodeOutput(%s) = %#v, want %#v", give, o, want)
	}
	b, _ := EncodeOutput(o)
	if bytes.Contains(b, []byte("futureField")) || bytes.Contains(b, []byte("extra")) {
		t.Errorf("EncodeOutput kept unknown fields: %s", b)
	}
}

func TestUnknownKeepsBytes(t *testing.T) {
	// <, >, & and U+2028 would be escaped by json.Marshal's HTML-safe mode.
	raw := "{\"type\":\"later\",\"html\":\"<a href=x>&</a>\",\"ls\":\"\u2028\",\"n\":1.50,\"esc\":\"\\u003c\"}"
	o, err := DecodeOutput([]byte(" \n" + raw + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u, ok := o.(Unknown); !ok || u.Type != "later" {
		t.Fatalf("DecodeOutput = %#v, want Unknown of type later", o)
	}
	check := func(what string, got []byte, contain bool) {
		t.Helper()
		if contain && !bytes.Contains(got, []byte(raw)) || !contain && !bytes.Equal(got, []byte(raw)) {
			t.Errorf("%s = %s, want the raw bytes %s", what, got, raw)
		}
	}
	b, _ := EncodeOutput(o)
	check("EncodeOutput", b, false)
	b, _ = Envelope{Run: "r", Seq: 1, Output: o}.MarshalJSON()
	check("Envelope.MarshalJSON", b, true)
	b, _ = ChatEvent{Type: ChatTypeMessage, Data: ChatMessage{Message: o}}.MarshalJSON()
	check("ChatEvent.MarshalJSON", b, true)
	b, _ = UnknownBlock{Type: "later", Raw: []byte(raw)}.MarshalJSON()
	check("UnknownBlock.MarshalJSON", b, false)

	// json.Marshal escapes HTML, as it always does; the value is the same.
	b, _ = json.Marshal(o)
	if again, err := DecodeOutput(b); err != nil || again.(Unknown).Type != "later" {
		t.Errorf("DecodeOutput(json.Marshal(o)) = %v, %v", again, err)
	}
}

func TestEncodeDefaults(t *testing.T) {
	tests := []struct {
		name string
		give Output
		want string
	}{
		{"empty tool input is {}", AssistantMessage{Content: []Block{ToolUseBlock{ID: "t"}}},
			`"content":[{"type":"tool_use","id":"t","name":"","input":{},"result":null,"subActivities":[],"skillPrompt":null,"interrupted":false}],"stopReason":null,"usage":null}`},
		{"nil content is []", UserMessage{}, `"sender":{"id":"","name":""},"content":[],"synthetic":false}`},
		{"zero time", ReasoningMessage{}, `{"type":"reasoning","createdAt":"0001-01-01T00:00:00Z","messageId":"","sessionId":null,"parent":{"messageId":null,"sessionId":null,"toolUseId":null},"engine":{"type":"","provider":"","model":{"id":"","name":""},"account":{"id":"","name":""}},"text":""}`},
		{"local time becomes UTC", ReasoningMessage{MessageBase: MessageBase{CreatedAt: time.Date(2026, 1, 1, 9, 0, 0, 0, time.FixedZone("X", 3600))}}, `"createdAt":"2026-01-01T08:00:00Z"`},
		{"start has no text", StreamEvent{Event: StreamStart, Text: "ignored"}, `{"type":"stream_event","event":"start","sessionId":"","reasoning":false}`},
		{"delta keeps empty text", StreamEvent{Event: StreamDelta}, `"text":"","reasoning":false}`},
		{"error result has only errors", Result{Subtype: ResultErrorMaxTurns, NumTurns: 9, StopReason: "x"}, `{"type":"result","subtype":"error_max_turns","sessionId":"","errors":[]}`},
		{"empty run state fields omitted", RunState{State: RunQueued}, `{"type":"run_state","state":"queued"}`},
		{"status normalised", SystemInit{MCPServers: []MCPServer{{Name: "a", Status: "error"}}}, `"tools":[],"mcpServers":[{"name":"a","status":"disconnected"}]}`},
		{"unknown without raw", Unknown{Type: "later"}, `{"type":"later"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := EncodeOutput(tt.give)
			if err != nil {
				t.Fatalf("EncodeOutput: %v", err)
			}
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("EncodeOutput = %s, want it to contain %s", b, tt.want)
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	tests := []struct {
		name string
		give func() ([]byte, error)
		want string
	}{
		{"nil output", func() ([]byte, error) { return EncodeOutput(nil) }, "encode output: nil"},
		{"nil pointer", func() ([]byte, error) { return EncodeOutput((*Result)(nil)) }, "encode output: nil"},
		{"stop reason", func() ([]byte, error) { return EncodeOutput(AssistantMessage{StopReason: "done"}) }, `encode assistant: stopReason: invalid value "done"`},
		{"engine type", func() ([]byte, error) {
			return EncodeOutput(ReasoningMessage{MessageBase: MessageBase{Engine: MessageEngine{Type: "vim"}}})
		}, "engine.type"},
		{"year", func() ([]byte, error) {
			return EncodeOutput(ReasoningMessage{MessageBase: MessageBase{CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}})
		}, "createdAt: year 10000 out of range"},
		{"tool input array", func() ([]byte, error) {
			return EncodeOutput(AssistantMessage{Content: []Block{ToolUseBlock{Input: json.RawMessage(`[1]`)}}})
		}, "content[0]: encode tool_use: input: want a JSON object"},
		{"tool result invalid", func() ([]byte, error) {
			return EncodeOutput(AssistantMessage{Content: []Block{ToolUseBlock{Result: json.RawMessage(`{`)}}})
		}, "result: invalid JSON"},
		{"nil block", func() ([]byte, error) { return EncodeOutput(UserMessage{Content: []Block{nil}}) }, "content[0]: nil block"},
		{"block misplaced", func() ([]byte, error) {
			return EncodeOutput(AssistantMessage{Content: []Block{ImageBlock{}}})
		}, "content[0]: a image block is not allowed here"},
		{"sub-activity type", func() ([]byte, error) {
			return json.Marshal(SubActivity{Type: "video"})
		}, `type: invalid value "video"`},
		{"trigger", func() ([]byte, error) { return EncodeOutput(CompactBoundary{}) }, "trigger: missing"},
		{"stream event", func() ([]byte, error) { return EncodeOutput(StreamEvent{Event: "middle"}) }, `event: invalid value "middle"`},
		{"result subtype", func() ([]byte, error) { return EncodeOutput(Result{}) }, "subtype: missing"},
		{"rate limit window", func() ([]byte, error) {
			return EncodeOutput(RateLimit{Status: RateLimitRejected, RateLimitType: "hourly"})
		}, "rateLimitType"},
		{"notification level", func() ([]byte, error) { return EncodeOutput(Notification{}) }, "level: missing"},
		{"run state", func() ([]byte, error) { return EncodeOutput(RunState{State: "bogus"}) }, "state"},
		{"unknown raw type mismatch", func() ([]byte, error) {
			return EncodeOutput(Unknown{Type: "a", Raw: json.RawMessage(`{"type":"b"}`)})
		}, `type "a" does not match Raw's "b"`},
		{"unknown raw not an object", func() ([]byte, error) {
			return EncodeOutput(Unknown{Type: "a", Raw: json.RawMessage(`[]`)})
		}, "want a JSON object"},
		{"unknown without type", func() ([]byte, error) { return EncodeOutput(Unknown{}) }, "type: missing"},
		{"envelope without output", func() ([]byte, error) { return Envelope{}.MarshalJSON() }, "encode envelope: encode output: nil"},
		{"chat data mismatch", func() ([]byte, error) {
			return ChatEvent{Type: ChatTypeError, Data: ChatCancelled{}}.MarshalJSON()
		}, "a chat:cancelled payload in a chat:error event"},
		{"chat without data", func() ([]byte, error) { return ChatEvent{Type: ChatTypeError}.MarshalJSON() }, "data: missing"},
		{"chat message transient", func() ([]byte, error) {
			return ChatMessage{Message: RunState{State: RunRunning}}.MarshalJSON()
		}, "message: a run_state is not a persisted message"},
		{"chat message missing", func() ([]byte, error) { return ChatMessage{}.MarshalJSON() }, "message: missing"},
		{"chat partial", func() ([]byte, error) { return ChatPartial{}.MarshalJSON() }, "eventType: missing"},
		{"chat finished", func() ([]byte, error) { return ChatStreamFinished{Status: "done"}.MarshalJSON() }, "status"},
		{"chat error kind", func() ([]byte, error) { return ChatError{ErrorKind: "oops"}.MarshalJSON() }, "errorKind"},
		{"chat unknown raw", func() ([]byte, error) { return ChatUnknown{Type: "x", Raw: []byte(`1`)}.MarshalJSON() }, "data: want a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.give()
			if err == nil {
				t.Fatalf("encoded %s, want an error containing %q", b, tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestNullConventions(t *testing.T) {
	give := `{"type":"assistant","sessionId":null,"stopReason":null,"usage":null,"parent":null,"content":null,` +
		`"engine":{"type":null,"model":null}}`
	o, err := DecodeOutput([]byte(give))
	if err != nil {
		t.Fatal(err)
	}
	if want := (AssistantMessage{}); !reflect.DeepEqual(o, want) {
		t.Errorf("DecodeOutput(%s) = %#v, want the zero message", give, o)
	}
	b, _ := EncodeOutput(AssistantMessage{MessageBase: MessageBase{SessionID: "s", Parent: Parent{ToolUseID: "t"}}})
	for _, want := range []string{`"sessionId":"s"`, `"parent":{"messageId":null,"sessionId":null,"toolUseId":"t"}`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("EncodeOutput = %s, want it to contain %s", b, want)
		}
	}
}
