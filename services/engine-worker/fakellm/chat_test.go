package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"clopen.dev/services/engine-worker/fakellm"
)

func newOpenAI(f *fixture) openai.Client {
	return openai.NewClient(option.WithBaseURL(f.url+"/v1"), option.WithAPIKey("test-key"),
		option.WithMaxRetries(0), option.WithHTTPClient(f.hc))
}

func chatTool(name string, schema map[string]any) openai.ChatCompletionToolUnionParam {
	return openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: name, Parameters: schema})
}

func chatParams(prompt string, tools ...openai.ChatCompletionToolUnionParam) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:         "fakellm",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools:         tools,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
}

// chatRun is a streamed chat completion as the SDK's accumulator saw it.
type chatRun struct {
	acc       openai.ChatCompletionAccumulator
	reasoning string
	chunks    int
}

func chatStream(ctx context.Context, t *testing.T, c openai.Client, params openai.ChatCompletionNewParams) (chatRun, error) {
	t.Helper()
	stream := c.Chat.Completions.NewStreaming(ctx, params)
	defer stream.Close()
	var run chatRun
	for stream.Next() {
		chunk := stream.Current()
		run.chunks++
		if !run.acc.AddChunk(chunk) {
			t.Fatalf("accumulator rejected chunk %s", chunk.RawJSON())
		}
		if len(chunk.Choices) == 0 {
			continue
		}
		if f, ok := chunk.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
			var s string
			if err := json.Unmarshal([]byte(f.Raw()), &s); err != nil {
				t.Fatalf("reasoning_content %s: %v", f.Raw(), err)
			}
			run.reasoning += s
		}
	}
	return run, stream.Err()
}

func TestChatStreamText(t *testing.T) {
	tests := []struct {
		name          string
		give          string
		wantText      string
		wantReasoning bool
	}{
		{"plain", "hi", "Hello from fakellm.", false},
		{"thinking", "@@THINK@@ hi", "Hello from fakellm.", true},
		{"long", "@@LONG@@", strings.Repeat("x", 2000*6), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			run, err := chatStream(testContext(t), t, newOpenAI(f), chatParams(tt.give))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			choice := run.acc.Choices[0]
			if tt.name == "long" {
				if len(choice.Message.Content) != len(tt.wantText) || run.chunks < 2000 {
					t.Errorf("long text is %d bytes in %d chunks, want %d bytes in ≥2000 chunks", len(choice.Message.Content), run.chunks, len(tt.wantText))
				}
			} else if choice.Message.Content != tt.wantText {
				t.Errorf("content = %q, want %q", choice.Message.Content, tt.wantText)
			}
			if (run.reasoning != "") != tt.wantReasoning {
				t.Errorf("reasoning_content = %q, want some: %v", run.reasoning, tt.wantReasoning)
			}
			if choice.FinishReason != "stop" {
				t.Errorf("finish_reason = %q, want stop", choice.FinishReason)
			}
			if run.acc.Usage.PromptTokens <= 0 || run.acc.Usage.CompletionTokens <= 0 {
				t.Errorf("usage = %+v, want positive token counts", run.acc.Usage)
			}
		})
	}
}

func TestChatStreamToolCall(t *testing.T) {
	for _, tt := range shellTests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			params := chatParams("@@TOOL@@ run it", chatTool("read", claudeBash), chatTool(tt.tool, tt.schema))
			run, err := chatStream(testContext(t), t, newOpenAI(f), params)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			choice := run.acc.Choices[0]
			if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 {
				t.Fatalf("finish_reason %q with %d tool calls, want tool_calls with 1", choice.FinishReason, len(choice.Message.ToolCalls))
			}
			call := choice.Message.ToolCalls[0]
			if call.Function.Name != tt.tool || call.ID == "" {
				t.Errorf("call = %s %q, want %s with an id", call.ID, call.Function.Name, tt.tool)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &got); err != nil {
				t.Fatalf("arguments %s: %v", call.Function.Arguments, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}

func TestChatToolResult(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	params := chatParams("@@TOOL@@", chatTool("bash", claudeBash))
	call := openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
		ID: "call_1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "bash", Arguments: `{"command":"x"}`}}}
	params.Messages = append(params.Messages,
		openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
			ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{call}}},
		openai.ToolMessage("ok\n", "call_1"))
	run, err := chatStream(testContext(t), t, newOpenAI(f), params)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got, want := run.acc.Choices[0].Message.Content, "Tool finished. Result: ok"; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
}

func TestChatError(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	_, err := chatStream(testContext(t), t, newOpenAI(f), chatParams("@@ERROR@@"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != 500 || apiErr.Type != "server_error" || !strings.Contains(apiErr.Message, "forced") {
		t.Errorf("error = %d %s %q, want 500 server_error with the forced message", apiErr.StatusCode, apiErr.Type, apiErr.Message)
	}
}

func TestChatNonStreaming(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	client := newOpenAI(f)
	got, err := client.Chat.Completions.New(testContext(t), chatParams("@@TOOL@@", chatTool("bash", claudeBash)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	choice := got.Choices[0]
	if choice.FinishReason != "tool_calls" || len(choice.Message.ToolCalls) != 1 || choice.Message.ToolCalls[0].Function.Name != "bash" {
		t.Errorf("choice = %+v, want one bash call", choice)
	}
	if got.Usage.TotalTokens <= 0 {
		t.Errorf("usage = %+v, want positive", got.Usage)
	}
}

// Without stream_options.include_usage there is no usage-only chunk, whose
// empty choices would trip clients that did not ask for it.
func TestChatUsageWithoutIncludeUsage(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	params := chatParams("hi")
	params.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	client := newOpenAI(f)
	stream := client.Chat.Completions.NewStreaming(testContext(t), params)
	defer stream.Close()
	var usage int64
	for stream.Next() {
		chunk := stream.Current()
		if len(chunk.Choices) == 0 {
			t.Fatalf("chunk without choices: %s", chunk.RawJSON())
		}
		usage += chunk.Usage.TotalTokens
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if usage <= 0 {
		t.Errorf("no usage on any chunk")
	}
}

func TestChatSlowCancel(t *testing.T) {
	f := newFixture(t, fakellm.Config{SlowFor: 30 * time.Second, KeepAlive: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(testContext(t))
	client := newOpenAI(f)
	stream := client.Chat.Completions.NewStreaming(ctx, chatParams("@@SLOW@@"))
	defer stream.Close()
	for stream.Next() {
		if c := stream.Current(); len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			break
		}
	}
	f.assertStalled(t)
	cancel()
	f.waitHandler(t, time.Second)
}
