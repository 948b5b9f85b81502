package fakellm_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/genai"

	"clopen.dev/services/engine-worker/fakellm"
)

func newGenai(t *testing.T, f *fixture) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(t.Context(), &genai.ClientConfig{APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPClient: f.hc, HTTPOptions: genai.HTTPOptions{BaseURL: f.url}})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	return c
}

func geminiTools(tools ...*genai.FunctionDeclaration) *genai.GenerateContentConfig {
	return &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: tools}}}
}

// geminiRun is a streamed answer as the SDK delivered it.
type geminiRun struct {
	text, thought string
	calls         []*genai.FunctionCall
	finish        genai.FinishReason
	usage         *genai.GenerateContentResponseUsageMetadata
}

func geminiStream(ctx context.Context, c *genai.Client, contents []*genai.Content, cfg *genai.GenerateContentConfig) (geminiRun, error) {
	var run geminiRun
	for resp, err := range c.Models.GenerateContentStream(ctx, "fakellm", contents, cfg) {
		if err != nil {
			return run, err
		}
		cand := resp.Candidates[0]
		for _, p := range cand.Content.Parts {
			switch {
			case p.Thought:
				run.thought += p.Text
			case p.FunctionCall != nil:
				run.calls = append(run.calls, p.FunctionCall)
			default:
				run.text += p.Text
			}
		}
		if cand.FinishReason != "" {
			run.finish = cand.FinishReason
		}
		run.usage = resp.UsageMetadata
	}
	return run, nil
}

func TestGeminiStreamText(t *testing.T) {
	tests := []struct {
		name        string
		give        string
		wantText    string
		wantThought bool
	}{
		{"plain", "hi", "Hello from fakellm.", false},
		{"thinking", "@@THINK@@ hi", "Hello from fakellm.", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			run, err := geminiStream(testContext(t), newGenai(t, f), genai.Text(tt.give), nil)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if run.text != tt.wantText {
				t.Errorf("text = %q, want %q", run.text, tt.wantText)
			}
			if (run.thought != "") != tt.wantThought {
				t.Errorf("thought = %q, want some: %v", run.thought, tt.wantThought)
			}
			if run.finish != genai.FinishReasonStop {
				t.Errorf("finishReason = %q, want STOP", run.finish)
			}
			if run.usage == nil || run.usage.PromptTokenCount <= 0 || run.usage.CandidatesTokenCount <= 0 {
				t.Errorf("usageMetadata = %+v, want positive counts", run.usage)
			}
		})
	}
}

func TestGeminiStreamToolCall(t *testing.T) {
	for _, tt := range shellTests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			cfg := geminiTools(&genai.FunctionDeclaration{Name: "read_file", ParametersJsonSchema: claudeBash},
				&genai.FunctionDeclaration{Name: tt.tool, ParametersJsonSchema: tt.schema})
			run, err := geminiStream(testContext(t), newGenai(t, f), genai.Text("@@TOOL@@ run"), cfg)
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			if len(run.calls) != 1 || run.calls[0].Name != tt.tool {
				t.Fatalf("calls = %+v, want one call of %s", run.calls, tt.tool)
			}
			got := roundTrip(t, run.calls[0].Args)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// roundTrip normalizes a decoded value's Go types ([]string vs []any).
func roundTrip(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// The legacy OpenAPI-style schema ("parameters", upper-case types) works too.
func TestGeminiLegacyParameters(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	cfg := geminiTools(&genai.FunctionDeclaration{Name: "shell", Parameters: &genai.Schema{
		Type: genai.TypeObject, Required: []string{"command"},
		Properties: map[string]*genai.Schema{"command": {Type: genai.TypeArray, Items: &genai.Schema{Type: genai.TypeString}}},
	}})
	run, err := geminiStream(testContext(t), newGenai(t, f), genai.Text("@@TOOL@@"), cfg)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	want := map[string]any{"command": []any{"bash", "-lc", shellCommand}}
	if len(run.calls) != 1 {
		t.Fatalf("calls = %+v, want one", run.calls)
	}
	if diff := cmp.Diff(want, roundTrip(t, run.calls[0].Args)); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
}

func TestGeminiToolResult(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	contents := append(genai.Text("@@TOOL@@"),
		&genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{genai.NewPartFromFunctionCall("run_shell_command", map[string]any{"command": "x"})}},
		genai.NewContentFromFunctionResponse("run_shell_command", map[string]any{"output": "ok\n"}, genai.RoleUser))
	run, err := geminiStream(testContext(t), newGenai(t, f), contents, geminiTools(&genai.FunctionDeclaration{Name: "run_shell_command", ParametersJsonSchema: geminiShell}))
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	if got, want := run.text, "Tool finished. Result: ok"; got != want {
		t.Errorf("text = %q, want %q", got, want)
	}
}

// Gemini CLI's model router asks for JSON that fits a schema; the answer is
// built from that schema.
func TestGeminiJSONMode(t *testing.T) {
	tests := []struct {
		name string
		give genai.GenerateContentConfig
		want map[string]any
	}{
		{
			name: "router responseJsonSchema",
			give: genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseJsonSchema: map[string]any{
				"type": "object", "required": []any{"complexity_reasoning", "complexity_score"},
				"properties": map[string]any{
					"complexity_reasoning": map[string]any{"type": "string"},
					"complexity_score":     map[string]any{"type": "integer"},
				}}},
			want: map[string]any{"complexity_reasoning": "fakellm", "complexity_score": float64(1)},
		},
		{
			name: "nested responseSchema",
			give: genai.GenerateContentConfig{ResponseMIMEType: "application/json", ResponseSchema: &genai.Schema{
				Type: genai.TypeObject, Properties: map[string]*genai.Schema{
					"next_speaker": {Type: genai.TypeString, Enum: []string{"user", "model"}},
					"ratio":        {Type: genai.TypeNumber},
					"done":         {Type: genai.TypeBoolean},
					"steps": {Type: genai.TypeArray, Items: &genai.Schema{Type: genai.TypeObject,
						Properties: map[string]*genai.Schema{"name": {Type: genai.TypeString}}}},
				}}},
			want: map[string]any{"next_speaker": "user", "ratio": float64(1), "done": true,
				"steps": []any{map[string]any{"name": "fakellm"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, fakellm.Config{})
			resp, err := newGenai(t, f).Models.GenerateContent(testContext(t), "gemini-router", genai.Text("route @@TOOL@@"), &tt.give)
			if err != nil {
				t.Fatalf("GenerateContent: %v", err)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(resp.Text()), &got); err != nil {
				t.Fatalf("answer %q is not JSON: %v", resp.Text(), err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("JSON answer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGeminiNonStreamingText(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	resp, err := newGenai(t, f).Models.GenerateContent(testContext(t), "fakellm", genai.Text("hi"), nil)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if resp.Text() != "Hello from fakellm." || resp.UsageMetadata == nil || resp.UsageMetadata.TotalTokenCount <= 0 {
		t.Errorf("answer %q usage %+v", resp.Text(), resp.UsageMetadata)
	}
}

func TestGeminiError(t *testing.T) {
	f := newFixture(t, fakellm.Config{})
	_, err := geminiStream(testContext(t), newGenai(t, f), genai.Text("@@ERROR@@"), nil)
	var apiErr genai.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want genai.APIError", err)
	}
	if apiErr.Code != 500 || apiErr.Status != "INTERNAL" || !strings.Contains(apiErr.Message, "forced") {
		t.Errorf("error = %d %s %q, want 500 INTERNAL with the forced message", apiErr.Code, apiErr.Status, apiErr.Message)
	}
}

func TestGeminiSlowCancel(t *testing.T) {
	f := newFixture(t, fakellm.Config{SlowFor: 30 * time.Second, KeepAlive: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(testContext(t))
	defer cancel()
	// Pull, rather than range, so that the body stays open until ctx ends:
	// leaving a range loop would close it and hang up first.
	next, stop := iter.Pull2(newGenai(t, f).Models.GenerateContentStream(ctx, "fakellm", genai.Text("@@SLOW@@"), nil))
	defer stop()
	for {
		resp, err, ok := next()
		if !ok || err != nil {
			t.Fatalf("stream ended before the first text (err %v)", err)
		}
		if resp.Text() != "" {
			break
		}
	}
	f.assertStalled(t)
	cancel()
	f.waitHandler(t, time.Second)
}
