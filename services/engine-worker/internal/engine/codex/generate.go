package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

var _ engine.StructuredGenerator = (*Engine)(nil)

// generateEffort is the reasoning effort of a structured generation.
const generateEffort = "low"

// Generate implements engine.StructuredGenerator with turn/start's
// outputSchema, which codex sends to the Responses API as text.format
// json_schema (strict): the model's final message is the document. The
// turn is ephemeral (an app-server of its own, a thread that is not
// saved), runs at low effort in a read-only sandbox, and is offered no
// function tool; the two tools codex cannot withhold are harmless here
// (apply_patch asks, and Unattended refuses; tool_search has nothing
// deferred to find). A final message that is not JSON is read with
// engine.ExtractJSON.
func (e *Engine) Generate(ctx context.Context, req engine.GenerateRequest) (json.RawMessage, error) {
	var final string
	var res *events.Result
	emit := func(o events.Output) error {
		switch v := o.(type) {
		case events.AssistantMessage:
			if v.Parent.ToolUseID != "" {
				return nil // a sub-agent's words are not the answer
			}
			var text strings.Builder
			for _, b := range v.Content {
				if t, ok := b.(events.TextBlock); ok {
					text.WriteString(t.Text)
				}
			}
			final = text.String()
		case events.Result:
			res = &v
		}
		return nil
	}
	err := e.run(ctx, engine.Request{Tenant: req.Tenant, RunID: uuid.NewString(), SessionID: uuid.NewString(),
		Workspace: req.Workspace, ConfigDir: req.ConfigDir, Model: req.Model, Provider: req.Provider, AccountID: req.AccountID,
		Effort: generateEffort, Prompt: []events.Block{events.TextBlock{Text: req.Prompt}}, Ephemeral: true,
		Permissions: events.PermissionRules{Deny: []string{"*"}}, Interaction: engine.Unattended}, req.Schema, emit)
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, engine.Errorf(events.KindCrashed, "codex ended the generation without a result")
	case res.IsError():
		return nil, engine.Errorf(events.KindProvider, "generation failed: %s", strings.Join(res.Errors, "; "))
	}
	var doc bytes.Buffer
	if json.Compact(&doc, []byte(final)) == nil {
		return doc.Bytes(), nil
	}
	out, err := engine.ExtractJSON(final)
	if err != nil {
		return nil, &engine.Error{Kind: events.KindProvider, Msg: "codex gave no structured output: " + err.Error(), Err: err}
	}
	return out, nil
}
