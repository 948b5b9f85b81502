package events

import (
	"encoding/json"
	"errors"
	"testing"
)

// malformed is one input every decoder must refuse with a *DecodeError that
// names the type and the field.
type malformed struct {
	name      string
	give      string
	wantType  string
	wantField string
	wantMsg   string // the whole Error(), when set
}

func checkMalformed(t *testing.T, tt malformed, decode func([]byte) error) {
	t.Helper()
	err := decode([]byte(tt.give))
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("decode(%s) err = %v (%T), want a *DecodeError", tt.give, err, err)
	}
	if de.Type != tt.wantType || de.Field != tt.wantField {
		t.Errorf("decode(%s) = Type %q Field %q, want %q %q (%v)", tt.give, de.Type, de.Field, tt.wantType, tt.wantField, err)
	}
	if tt.wantMsg != "" && err.Error() != tt.wantMsg {
		t.Errorf("decode(%s) error = %q, want %q", tt.give, err.Error(), tt.wantMsg)
	}
}

func TestDecodeOutputMalformed(t *testing.T) {
	tests := []malformed{
		{"tool input not an object", `{"type":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t","name":"Bash","input":[1]}]}`,
			"assistant", "content[1].input", "decode assistant: content[1].input: want a JSON object"},
		{"tool input null", `{"type":"assistant","content":[{"type":"tool_use","input":null}]}`, "assistant", "content[0].input", ""},
		{"usage without source", `{"type":"usage","usage":{"inputTokens":1}}`, "usage", "source", ""},
		{"usage of a made-up source", `{"type":"usage","source":"agent","usage":{}}`, "usage", "source", ""},
		{"negative usage cost", `{"type":"usage","source":"engine","usage":{},"costUsd":-1}`,
			"usage", "costUsd", "decode usage: costUsd: negative"},
		{"stream event middle", `{"type":"stream_event","event":"middle","sessionId":"s"}`,
			"stream_event", "event", `decode stream_event: event: invalid value "middle"`},
		{"stream event missing", `{"type":"stream_event","sessionId":"s"}`, "stream_event", "event", "decode stream_event: event: missing"},
		{"run state bogus", `{"type":"run_state","state":"bogus"}`, "run_state", "state", `decode run_state: state: invalid value "bogus"`},
		{"run state error kind", `{"type":"run_state","state":"failed","errorKind":"oops"}`, "run_state", "errorKind", ""},
		{"not JSON", `{"type":`, "output", "", ""},
		{"trailing garbage", `{"type":"user"} x`, "output", "", ""},
		{"empty input", ``, "output", "", "decode output: want a JSON object"},
		{"array", `[]`, "output", "", "decode output: want a JSON object"},
		{"null", `null`, "output", "", ""},
		{"string", `"user"`, "output", "", ""},
		{"missing type", `{"sessionId":"s"}`, "output", "type", "decode output: type: missing"},
		{"empty type", `{"type":""}`, "output", "type", ""},
		{"type not a string", `{"type":5}`, "output", "type", "decode output: type: want a string"},
		{"created at", `{"type":"reasoning","createdAt":"yesterday"}`, "reasoning", "createdAt", ""},
		{"created at out of range", `{"type":"reasoning","createdAt":"0000-01-01T00:00:00+01:00"}`, "reasoning", "createdAt", ""},
		{"session id", `{"type":"reasoning","sessionId":7}`, "reasoning", "sessionId", ""},
		{"parent not an object", `{"type":"reasoning","parent":"p"}`, "reasoning", "parent", ""},
		{"parent tool use id", `{"type":"user","parent":{"toolUseId":1}}`, "user", "parent.toolUseId", ""},
		{"engine type", `{"type":"assistant","engine":{"type":"nope"}}`, "assistant", "engine.type", ""},
		{"engine account id", `{"type":"assistant","engine":{"account":{"id":0}}}`, "assistant", "engine.account.id", ""},
		{"sender name", `{"type":"user","sender":{"name":1}}`, "user", "sender.name", ""},
		{"content not an array", `{"type":"user","content":{}}`, "user", "content", ""},
		{"content element", `{"type":"user","content":["hi"]}`, "user", "content[0]", ""},
		{"block without type", `{"type":"user","content":[{"text":"hi"}]}`, "user", "content[0].type", ""},
		{"image in assistant", `{"type":"assistant","content":[{"type":"image"}]}`, "assistant", "content[0].type", ""},
		{"tool_use in user", `{"type":"user","content":[{"type":"tool_use","input":{}}]}`, "user", "content[0].type", ""},
		{"synthetic", `{"type":"user","synthetic":"yes"}`, "user", "synthetic", ""},
		{"tool result error", `{"type":"user","content":[{"type":"tool_result","isError":1}]}`, "user", "content[0].isError", ""},
		{"sub-activity type", `{"type":"assistant","content":[{"type":"tool_use","subActivities":[{"type":"x"}]}]}`, "assistant", "content[0].subActivities[0].type", ""},
		{"sub-activity input", `{"type":"assistant","content":[{"type":"tool_use","subActivities":[{"type":"tool_use","input":"x"}]}]}`, "assistant", "content[0].subActivities[0].input", ""},
		{"stop reason", `{"type":"assistant","stopReason":"done"}`, "assistant", "stopReason", ""},
		{"usage fraction", `{"type":"assistant","usage":{"inputTokens":1.5}}`, "assistant", "usage.inputTokens", ""},
		{"usage exponent", `{"type":"assistant","usage":{"outputTokens":1e3}}`, "assistant", "usage.outputTokens", ""},
		{"usage overflow", `{"type":"assistant","usage":{"outputTokens":9223372036854775808}}`, "assistant", "usage.outputTokens", ""},
		{"trigger", `{"type":"compact_boundary","trigger":"sometimes"}`, "compact_boundary", "trigger", ""},
		{"trigger missing", `{"type":"compact_boundary","preTokens":1}`, "compact_boundary", "trigger", ""},
		{"pre tokens", `{"type":"compact_boundary","trigger":"auto","preTokens":"1"}`, "compact_boundary", "preTokens", ""},
		{"reasoning flag", `{"type":"stream_event","event":"start","reasoning":"true"}`, "stream_event", "reasoning", ""},
		{"delta text", `{"type":"stream_event","event":"delta","text":{}}`, "stream_event", "text", ""},
		{"result subtype", `{"type":"result","subtype":"error_max_budget_usd"}`, "result", "subtype", ""},
		{"result missing subtype", `{"type":"result","sessionId":"s"}`, "result", "subtype", ""},
		{"result errors", `{"type":"result","subtype":"error_max_turns","errors":[1]}`, "result", "errors[0]", ""},
		{"result cost", `{"type":"result","subtype":"success","totalCostUsd":"0.1"}`, "result", "totalCostUsd", ""},
		{"result cost range", `{"type":"result","subtype":"success","totalCostUsd":1e999}`, "result", "totalCostUsd", ""},
		{"result turns", `{"type":"result","subtype":"success","numTurns":2.5}`, "result", "numTurns", ""},
		{"system init engine", `{"type":"system_init","engine":"vim"}`, "system_init", "engine", ""},
		{"system init tools", `{"type":"system_init","tools":"Bash"}`, "system_init", "tools", ""},
		{"mcp server name", `{"type":"system_init","mcpServers":[{"name":1}]}`, "system_init", "mcpServers[0].name", ""},
		{"rate limit status", `{"type":"rate_limit","status":"allowed"}`, "rate_limit", "status", ""},
		{"rate limit resets", `{"type":"rate_limit","status":"rejected","resetsAt":"soon"}`, "rate_limit", "resetsAt", ""},
		{"rate limit window", `{"type":"rate_limit","status":"rejected","rateLimitType":"hourly"}`, "rate_limit", "rateLimitType", ""},
		{"notification level", `{"type":"notification","level":"fatal"}`, "notification", "level", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkMalformed(t, tt, func(b []byte) error { _, err := DecodeOutput(b); return err })
		})
	}
}

func TestDecodeBlockMalformed(t *testing.T) {
	tests := []malformed{
		{"input string", `{"type":"tool_use","input":"ls"}`, "tool_use", "input", "decode tool_use: input: want a JSON object"},
		{"no type", `{"text":"a"}`, "block", "type", ""},
		{"text", `{"type":"text","text":null,"x":1}`, "", "", ""}, // null reads as "": not an error
		{"title", `{"type":"document","title":false}`, "document", "title", ""},
		{"not an object", `[{"type":"text"}]`, "block", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			decode := func(b []byte) error { _, err := DecodeBlock(b); return err }
			if tt.wantType == "" {
				if err := decode([]byte(tt.give)); err != nil {
					t.Fatalf("DecodeBlock(%s) = %v, want no error", tt.give, err)
				}
				return
			}
			checkMalformed(t, tt, decode)
		})
	}
}

func TestDecodeChatEventMalformed(t *testing.T) {
	const head = `"chatSessionId":"c","timestamp":"2026-05-01T12:30:46Z"`
	tests := []malformed{
		{"partial event type", `{"type":"chat:partial",` + head + `,"data":{"eventType":"middle"}}`, "chat:partial", "data.eventType", ""},
		{"data missing", `{"type":"chat:complete",` + head + `}`, "chat:complete", "data", "decode chat:complete: data: missing"},
		{"data not an object", `{"type":"chat:future",` + head + `,"data":[]}`, "chat:future", "data", ""},
		{"no type", `{` + head + `,"data":{}}`, "chat event", "type", ""},
		{"timestamp", `{"type":"chat:complete","timestamp":"now","data":{}}`, "chat:complete", "timestamp", ""},
		{"source seq", `{"type":"chat:complete","source":{"run":"r","seq":"1"},"data":{}}`, "chat:complete", "source.seq", ""},
		{"source epoch negative", `{"type":"chat:complete","source":{"run":"r","epoch":-1},"data":{}}`, "chat:complete", "source.epoch", ""},
		{"message missing", `{"type":"chat:message",` + head + `,"data":{}}`, "chat:message", "data.message", ""},
		{"message transient", `{"type":"chat:message",` + head + `,"data":{"message":{"type":"run_state","state":"running"}}}`,
			"chat:message", "data.message", "decode chat:message: data.message: a run_state is not a persisted message"},
		{"message inner field", `{"type":"chat:message",` + head + `,"data":{"message":{"type":"assistant","content":[{"type":"tool_use","input":1}]}}}`,
			"chat:message", "data.message.content[0].input", ""},
		{"message engine", `{"type":"chat:message",` + head + `,"data":{"message":{"type":"reasoning"},"engine":"x"}}`, "chat:message", "data.engine", ""},
		{"notification type", `{"type":"chat:notification",` + head + `,"data":{"notification":{"type":"loud"}}}`, "chat:notification", "data.notification.type", ""},
		{"rate limit status", `{"type":"chat:rate_limit",` + head + `,"data":{"status":"ok"}}`, "chat:rate_limit", "data.status", ""},
		{"error kind", `{"type":"chat:error",` + head + `,"data":{"error":"x","errorKind":"bad"}}`, "chat:error", "data.errorKind", ""},
		{"cancelled status", `{"type":"chat:cancelled",` + head + `,"data":{"status":"done"}}`, "chat:cancelled", "data.status", ""},
		{"finished status", `{"type":"chat:stream-finished",` + head + `,"data":{"status":"ok"}}`, "chat:stream-finished", "data.status", ""},
		{"run state", `{"type":"chat:run-state",` + head + `,"data":{"state":"bogus"}}`, "chat:run-state", "data.state", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkMalformed(t, tt, func(b []byte) error { _, err := DecodeChatEvent(b); return err })
		})
	}
}

func TestDecodeEnvelopeMalformed(t *testing.T) {
	tests := []malformed{
		{"output missing", `{"tenant":"t","run":"r","seq":1}`, "envelope", "output", "decode envelope: output: missing"},
		{"output inner field", `{"seq":1,"output":{"type":"assistant","content":[{"type":"text"},{"type":"tool_use","input":[]}]}}`,
			"envelope", "output.content[1].input", "decode envelope: output.content[1].input: want a JSON object"},
		{"output without type", `{"output":{}}`, "envelope", "output.type", ""},
		{"epoch negative", `{"epoch":-1,"output":{"type":"x"}}`, "envelope", "epoch", ""},
		{"seq string", `{"seq":"1","output":{"type":"x"}}`, "envelope", "seq", ""},
		{"emitted at", `{"emittedAt":1,"output":{"type":"x"}}`, "envelope", "emittedAt", ""},
		{"not an object", `"envelope"`, "envelope", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkMalformed(t, tt, func(b []byte) error { _, err := DecodeEnvelope(b); return err })
		})
	}
}

func TestDecodeErrorUnwraps(t *testing.T) {
	_, err := DecodeOutput([]byte(`{"type":`))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Errorf("DecodeOutput(truncated) err = %v, want it to wrap a *json.SyntaxError", err)
	}
}

func TestUnmarshalJSONWrongType(t *testing.T) {
	var m AssistantMessage
	err := json.Unmarshal([]byte(`{"type":"reasoning","text":"x"}`), &m)
	var de *DecodeError
	if !errors.As(err, &de) || de.Type != TypeReasoning {
		t.Errorf("json.Unmarshal(reasoning into AssistantMessage) err = %v, want a *DecodeError for reasoning", err)
	}
	var b TextBlock
	if err := json.Unmarshal([]byte(`{"type":"image"}`), &b); !errors.As(err, &de) {
		t.Errorf("json.Unmarshal(image into TextBlock) err = %v, want a *DecodeError", err)
	}
}
