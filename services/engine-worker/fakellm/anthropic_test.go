package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/google/go-cmp/cmp"

	"clopen.dev/services/engine-worker/fakellm"
)

func newAnthropic(f *fixture) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(f.url), option.WithAPIKey("test-key"),
		option.WithMaxRetries(0), option.WithHTTPClient(f.hc))
}

func anthropicTool(name string, schema map[string]any) anthropic.ToolUnionParam {
	props := schema["properties"]
	var required []string
	for _, r := range schema["required"].([]any) {
		required = append(required, r.(string))
	}
	return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name,
		InputSchema: anthropic.ToolInputSchemaParam{Properties: props, Required: required}}}
}

// anthropicStream runs one streaming request and accumulates it with the SDK.
func anthropicStream(ctx context.Context, t *testing.T, c anthropic.Client, params anthropic.MessageNewParams) (anthropic.Message, []string, error) {
	t.Helper()
	stream := c.Messages.NewStreaming(ctx, params)
	defer stream.Close()
	var msg anthropic.Message
	var events []string
	for stream.Next() {
		ev := stream.Current()
		events = append(events, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate(%s) = %v", ev.Type, err)
		}
	}
	return msg, events, stream.Err()
}

func anthropicParams(prompt string, tools ...anthropic.ToolUnionParam) anthropic.MessageNewParams {
	return anthropic.MessageNewParams{Model: "fakellm", MaxTokens: 1024, Tools: tools,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
}

func anthropicText(msg anthropic.Message, kind string) string {
	var b strings.Builder
	for _, c := range msg.Content {
		if c.Type == kind {
			b.WriteString(c.Text + c.Thinking)
		}
	}
	return b.String()
}

func TestAnthropicStreamText(t *testing.T) {
	tests := []struct {
		name         string
		give         string
		wantText     string
		wantThinking bool
	}{
		{"plain", "hi", "Hello from fakellm.", false},
		{"thinking", "@@THINK@@ hi", "Hello from fakellm.", true},
		{"numbered deltas", "@@TEXT:3@@", "00001 00002 00003 ", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			msg, events, err := anthropicStream(testContext(t), t, newAnthropic(f), anthropicParams(tt.give))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if got := anthropicText(msg, "text"); got != tt.wantText {
				t.Errorf("text = %q, want %q", got, tt.wantText)
			}
			thinking := anthropicText(msg, "thinking")
			if (thinking != "") != tt.wantThinking {
				t.Errorf("thinking = %q, want some: %v", thinking, tt.wantThinking)
			}
			if tt.wantThinking && msg.Content[0].Signature == "" {
				t.Errorf("thinking block has no signature")
			}
			if msg.StopReason != anthropic.StopReasonEndTurn {
				t.Errorf("stop_reason = %q, want end_turn", msg.StopReason)
			}
			if msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 0 {
				t.Errorf("usage = %+v, want positive token counts", msg.Usage)
			}
			if events[0] != "message_start" || events[len(events)-1] != "message_stop" {
				t.Errorf("events = %v, want message_start … message_stop", events)
			}
		})
	}
}

func TestAnthropicStreamToolCall(t *testing.T) {
	for _, tt := range shellTests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			params := anthropicParams("please @@TOOL@@", anthropicTool("Read", claudeBash), anthropicTool(tt.tool, tt.schema))
			msg, _, err := anthropicStream(testContext(t), t, newAnthropic(f), params)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if msg.StopReason != anthropic.StopReasonToolUse {
				t.Errorf("stop_reason = %q, want tool_use", msg.StopReason)
			}
			last := msg.Content[len(msg.Content)-1]
			if last.Type != "tool_use" || last.Name != tt.tool || !strings.HasPrefix(last.ID, "toolu_") {
				t.Fatalf("last block = %s %s %s, want a tool_use of %s", last.Type, last.ID, last.Name, tt.tool)
			}
			var got map[string]any
			if err := json.Unmarshal(last.Input, &got); err != nil {
				t.Fatalf("tool input %s: %v", last.Input, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tool input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnthropicToolResult(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	params := anthropicParams("@@TOOL@@", anthropicTool("Bash", claudeBash))
	params.Messages = append(params.Messages,
		anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("toolu_1", map[string]any{"command": shellCommand}, "Bash")),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "ok\n", false)))
	msg, _, err := anthropicStream(testContext(t), t, newAnthropic(f), params)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got, want := anthropicText(msg, "text"), "Tool finished. Result: ok"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
	if got := f.srv.Requests(); len(got) != 1 || !got[0].ToolResult || got[0].Marker != "@@TOOL@@" {
		t.Errorf("Requests() = %+v, want one with tool_result and @@TOOL@@", got)
	}
}

func TestAnthropicError(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	_, _, err := anthropicStream(testContext(t), t, newAnthropic(f), anthropicParams("@@ERROR@@"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *anthropic.Error", err)
	}
	if apiErr.StatusCode != 500 || apiErr.Type() != "api_error" || !strings.Contains(apiErr.Message, "forced") {
		t.Errorf("error = %d %s %q, want 500 api_error with the forced message", apiErr.StatusCode, apiErr.Type(), apiErr.Message)
	}
}

func TestAnthropicNonStreaming(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	client := newAnthropic(f)
	msg, err := client.Messages.New(testContext(t), anthropicParams("@@THINK@@ @@TOOL@@", anthropicTool("Bash", claudeBash)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	var types []string
	for _, c := range msg.Content {
		types = append(types, c.Type)
	}
	if diff := cmp.Diff([]string{"thinking", "text", "tool_use"}, types); diff != "" {
		t.Errorf("block types (-want +got):\n%s", diff)
	}
	if msg.StopReason != anthropic.StopReasonToolUse || msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens <= 0 {
		t.Errorf("stop_reason %q usage %+v, want tool_use and positive usage", msg.StopReason, msg.Usage)
	}
}

func TestAnthropicAskWriteMCP(t *testing.T) {
	ask := map[string]any{"type": "object", "properties": map[string]any{
		"questions": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
			"question": map[string]any{"type": "string"}, "header": map[string]any{"type": "string"},
			"multiSelect": map[string]any{"type": "boolean"},
			"options": map[string]any{"type": "array", "items": map[string]any{"type": "object", "properties": map[string]any{
				"label": map[string]any{"type": "string"}, "description": map[string]any{"type": "string"}}}},
		}}},
	}, "required": []any{"questions"}}
	write := map[string]any{"type": "object", "properties": map[string]any{
		"file_path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"},
	}, "required": []any{"file_path", "content"}}
	echo := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []any{"text"}}
	tools := []anthropic.ToolUnionParam{anthropicTool("Bash", claudeBash), anthropicTool("AskUserQuestion", ask),
		anthropicTool("Write", write), anthropicTool("mcp__probe__echo", echo)}

	tests := []struct {
		give     string
		wantTool string
		want     map[string]any
	}{
		{"@@ASK@@", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
			"question": "Which option?", "header": "Pick", "multiSelect": false,
			"options": []any{
				map[string]any{"label": "Alpha", "description": "The first option"},
				map[string]any{"label": "Beta", "description": "The second option"}},
		}}}},
		{"Working directory: /work/space\n@@WRITE@@", "Write",
			map[string]any{"file_path": "/work/space/fakellm_written.txt", "content": "written by fakellm\n"}},
		{"@@MCP@@", "mcp__probe__echo", map[string]any{"text": "hi"}},
	}
	for _, tt := range tests {
		t.Run(tt.wantTool, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			msg, _, err := anthropicStream(testContext(t), t, newAnthropic(f), anthropicParams(tt.give, tools...))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			last := msg.Content[len(msg.Content)-1]
			if last.Name != tt.wantTool {
				t.Fatalf("called %q, want %q", last.Name, tt.wantTool)
			}
			var got map[string]any
			if err := json.Unmarshal(last.Input, &got); err != nil {
				t.Fatalf("tool input %s: %v", last.Input, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tool input (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnthropicSlowCancel(t *testing.T) {
	f := newFixture(t, fakellm.Config{SlowFor: 30 * time.Second, KeepAlive: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(testContext(t))
	client := newAnthropic(f)
	stream := client.Messages.NewStreaming(ctx, anthropicParams("@@SLOW@@"))
	defer stream.Close()
	for stream.Next() {
		if ev := stream.Current(); ev.Type == "content_block_delta" && ev.Delta.Text != "" {
			break
		}
	}
	f.assertStalled(t)
	cancel()
	if took := f.waitHandler(t, time.Second); took > time.Second {
		t.Errorf("handler returned %v after the cancel", took)
	}
}
