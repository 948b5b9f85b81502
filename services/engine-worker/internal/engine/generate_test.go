package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

const messageSchema = `{"type":"object","required":["message"],"properties":{"message":{"type":"string"}}}`

// native is a StructuredGenerator that answers doc.
type native struct {
	enginetest.AlwaysFails
	doc string
}

func (n native) Generate(context.Context, engine.GenerateRequest) (json.RawMessage, error) {
	return json.RawMessage(n.doc), nil
}

func TestGenerateByRun(t *testing.T) {
	tests := []struct {
		name, answer, want string
		wantKind           events.ErrorKind
	}{
		{"bare document", `{"message":"fix: a bug"}`, `{"message":"fix: a bug"}`, ""},
		{"fenced with prose", "Sure:\n```json\n{\"message\": \"feat: x\"}\n```", `{"message":"feat: x"}`, ""},
		{"truncated", `{"message": "feat: a very long mess`, "", events.KindProvider},
		{"does not fit the schema", `{"msg":"x"}`, "", events.KindProvider},
		{"no JSON", "I would rather not.", "", events.KindProvider},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := &enginetest.Answers{EngineType: events.EngineCodex, Text: tt.answer}
			got, err := engine.Generate(context.Background(), eng, engine.GenerateRequest{Tenant: "t1", Model: "m1",
				Provider: "openai", AccountID: "a1", Schema: json.RawMessage(messageSchema), Prompt: "Write a commit message.",
				Workspace: t.TempDir()})
			if tt.wantKind != "" {
				if engine.KindOf(err) != tt.wantKind {
					t.Errorf("Generate = %s, %v; want an error of kind %s", got, err, tt.wantKind)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("Generate = %s, %v; want %s", got, err, tt.want)
			}
			reqs := eng.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d turns ran, want 1", len(reqs))
			}
			r := reqs[0]
			prompt := r.PromptText()
			if !strings.HasPrefix(prompt, "Write a commit message.") || !strings.Contains(prompt, "```json\n"+messageSchema+"\n```") {
				t.Errorf("prompt = %q, want the task and the schema in a json fence", prompt)
			}
			if r.Model != "m1" || r.Provider != "openai" || r.AccountID != "a1" || len(r.Permissions.Deny) != 1 || r.Permissions.Deny[0] != "*" || !r.Ephemeral {
				t.Errorf("request = %+v, want the resolved target, every tool denied, ephemeral", r)
			}
			if d, err := r.Interaction.Permit(context.Background(), engine.PermissionRequest{Tool: "Bash"}); err != nil || d.Allow {
				t.Errorf("Permit = %+v, %v; want a refusal", d, err)
			}
			if _, err := r.Interaction.AskUser(context.Background(), "t", events.AskUserQuestionInput{}); !errors.Is(err, engine.ErrNoAnswer) {
				t.Errorf("AskUser err = %v, want ErrNoAnswer", err)
			}
		})
	}
}

func TestGenerateNative(t *testing.T) {
	ctx := context.Background()
	eng := native{AlwaysFails: enginetest.AlwaysFails{EngineType: events.EngineClaudeCode, Err: errors.New("Run must not be called")},
		doc: `{"message":"native"}`}
	req := engine.GenerateRequest{Schema: json.RawMessage(messageSchema), Prompt: "x"}
	if got, err := engine.Generate(ctx, eng, req); err != nil || string(got) != `{"message":"native"}` {
		t.Errorf("Generate = %s, %v", got, err)
	}
	eng.doc = `{"message":7}`
	if _, err := engine.Generate(ctx, eng, req); engine.KindOf(err) != events.KindProvider {
		t.Errorf("a native answer that does not fit: err = %v, want kind provider", err)
	}
	req.Schema = json.RawMessage(`[]`)
	if _, err := engine.Generate(ctx, eng, req); engine.KindOf(err) != events.KindInvalidRequest || !errors.Is(err, engine.ErrSchema) {
		t.Errorf("a schema that is not an object: err = %v, want kind invalid_request wrapping ErrSchema", err)
	}
}
