package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"clopen.dev/services/engine-worker/fakellm"
)

func responsesParams(input responses.ResponseInputParam, tools ...responses.ToolUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: "fakellm", Tools: tools,
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: input}}
}

func userInput(text string) responses.ResponseInputParam {
	return responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(text, responses.EasyInputMessageRoleUser)}
}

// responsesRun is a streamed response: the text deltas, the event types in
// order, and the final Response from response.completed.
type responsesRun struct {
	deltas, summary string
	events          []string
	final           responses.Response
}

func responsesStream(ctx context.Context, t *testing.T, c openai.Client, params responses.ResponseNewParams) (responsesRun, error) {
	t.Helper()
	stream := c.Responses.NewStreaming(ctx, params)
	defer stream.Close()
	var run responsesRun
	for stream.Next() {
		ev := stream.Current()
		run.events = append(run.events, ev.Type)
		switch ev.Type {
		case "response.output_text.delta":
			run.deltas += ev.Delta
		case "response.reasoning_summary_text.delta":
			run.summary += ev.Delta
		case "response.completed":
			run.final = ev.Response
		}
	}
	return run, stream.Err()
}

func TestResponsesStreamText(t *testing.T) {
	tests := []struct {
		name        string
		give        string
		wantText    string
		wantSummary bool
	}{
		{"plain", "hi", "Hello from fakellm.", false},
		{"thinking", "@@THINK@@ hi", "Hello from fakellm.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			run, err := responsesStream(testContext(t), t, newOpenAI(f), responsesParams(userInput(tt.give)))
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if run.deltas != tt.wantText || run.final.OutputText() != tt.wantText {
				t.Errorf("text = %q (deltas) / %q (completed), want %q", run.deltas, run.final.OutputText(), tt.wantText)
			}
			if (run.summary != "") != tt.wantSummary {
				t.Errorf("reasoning summary = %q, want some: %v", run.summary, tt.wantSummary)
			}
			if tt.wantSummary && run.final.Output[0].Type != "reasoning" {
				t.Errorf("first output item is %q, want reasoning", run.final.Output[0].Type)
			}
			if run.final.Status != "completed" || run.final.Usage.InputTokens <= 0 || run.final.Usage.OutputTokens <= 0 {
				t.Errorf("status %q usage %+v, want completed with positive usage", run.final.Status, run.final.Usage)
			}
			if run.events[0] != "response.created" || run.events[len(run.events)-1] != "response.completed" {
				t.Errorf("events = %v, want response.created … response.completed", run.events)
			}
		})
	}
}

func TestResponsesStreamToolCall(t *testing.T) {
	for _, tt := range shellTests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			params := responsesParams(userInput("@@TOOL@@"),
				responses.ToolParamOfFunction("view_image", claudeBash, false),
				responses.ToolParamOfFunction(tt.tool, tt.schema, false))
			run, err := responsesStream(testContext(t), t, newOpenAI(f), params)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			out := run.final.Output
			call := out[len(out)-1].AsFunctionCall()
			if out[len(out)-1].Type != "function_call" || call.Name != tt.tool || call.CallID == "" || call.ID == "" {
				t.Fatalf("last item = %+v, want a function_call of %s with id and call_id", call, tt.tool)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(call.Arguments), &got); err != nil {
				t.Fatalf("arguments %s: %v", call.Arguments, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
			if !slices.Contains(run.events, "response.function_call_arguments.done") || !slices.Contains(run.events, "response.output_item.done") {
				t.Errorf("events = %v, want function_call_arguments.done and output_item.done", run.events)
			}
		})
	}
}

func TestResponsesToolResult(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	input := append(userInput("@@TOOL@@"),
		responses.ResponseInputItemParamOfFunctionCall(`{"cmd":"x"}`, "call_1", "exec_command"),
		responses.ResponseInputItemParamOfFunctionCallOutput("ok\n"))
	input[2].OfFunctionCallOutput.CallID = openai.String("call_1")
	run, err := responsesStream(testContext(t), t, newOpenAI(f), responsesParams(input, responses.ToolParamOfFunction("exec_command", codexExec, false)))
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got, want := run.final.OutputText(), "Tool finished. Result: ok"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

func TestResponsesStringInput(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	client := newOpenAI(f)
	got, err := client.Responses.New(testContext(t), responses.ResponseNewParams{Model: "fakellm",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got.OutputText() != "Hello from fakellm." || got.Usage.TotalTokens <= 0 {
		t.Errorf("non-streaming response = %q usage %+v", got.OutputText(), got.Usage)
	}
}

func TestResponsesError(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	_, err := responsesStream(testContext(t), t, newOpenAI(f), responsesParams(userInput("@@ERROR@@")))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *openai.Error", err)
	}
	if apiErr.StatusCode != 500 || !strings.Contains(apiErr.Message, "forced") {
		t.Errorf("error = %d %q, want 500 with the forced message", apiErr.StatusCode, apiErr.Message)
	}
}

func TestResponsesSlowCancel(t *testing.T) {
	f := newFixture(t, fakellm.Config{SlowFor: 30 * time.Second, KeepAlive: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(testContext(t))
	client := newOpenAI(f)
	stream := client.Responses.NewStreaming(ctx, responsesParams(userInput("@@SLOW@@")))
	defer stream.Close()
	for stream.Next() {
		if stream.Current().Type == "response.output_text.delta" {
			break
		}
	}
	f.assertStalled(t)
	cancel()
	f.waitHandler(t, time.Second)
}
