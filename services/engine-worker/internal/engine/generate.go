package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
)

// StructuredGenerator is implemented by engines with a native structured
// output (a JSON schema the model is held to). Generate returns the
// document; it runs without tools, without a chat session, and stops when
// ctx ends.
type StructuredGenerator interface {
	Generate(ctx context.Context, req GenerateRequest) (json.RawMessage, error)
}

// GenerateRequest is one structured generation: a prompt, and the schema
// the answer must fit, on a model the catalog resolved (see ResolveTarget).
type GenerateRequest struct {
	Tenant    string
	Model     string
	Provider  string
	AccountID string
	// Schema is a JSON schema object describing an object (CheckSchema).
	Schema json.RawMessage
	Prompt string
	// Workspace is where the engine runs (the project's directory, or an
	// empty one); ConfigDir the engine's isolated config dir.
	Workspace string
	ConfigDir string
}

// Generate returns a document for req that fits its schema, from the
// engine's native structured output when it has one and from a plain turn
// (GenerateByRun) otherwise. Either way the document is checked with
// ValidateJSON: a bad schema is an error of kind events.KindInvalidRequest,
// an answer that does not fit one of kind events.KindProvider.
func Generate(ctx context.Context, eng Engine, req GenerateRequest) (json.RawMessage, error) {
	if err := CheckSchema(req.Schema); err != nil {
		return nil, &Error{Kind: events.KindInvalidRequest, Msg: err.Error(), Err: err}
	}
	var doc json.RawMessage
	var err error
	if g, ok := eng.(StructuredGenerator); ok {
		doc, err = g.Generate(ctx, req)
	} else {
		doc, err = GenerateByRun(ctx, eng, req)
	}
	if err != nil {
		return nil, err
	}
	if err := ValidateJSON(req.Schema, doc); err != nil {
		return nil, Errorf(events.KindProvider, "the model's answer does not fit the schema: %v", err)
	}
	return doc, nil
}

// JSONPrompt is the prompt GenerateByRun sends: the task, then the demand
// for one JSON document matching the schema, which it quotes in a ```json
// fence.
func JSONPrompt(prompt string, schema json.RawMessage) string {
	return strings.TrimSpace(prompt) + "\n\nAnswer with one JSON document and nothing else: no prose, no code fence. " +
		"It must match this JSON schema:\n```json\n" + string(schema) + "\n```"
}

// GenerateByRun is structured generation for engines without a native
// structured output: one ephemeral turn through Run with JSONPrompt, every
// tool denied and every question unanswered (Unattended), whose assistant
// text is read
// with ExtractJSON. A failed turn is the engine's error; an answer without
// a JSON document is an error of kind events.KindProvider.
func GenerateByRun(ctx context.Context, eng Engine, req GenerateRequest) (json.RawMessage, error) {
	var text strings.Builder
	var res *events.Result
	emit := func(o events.Output) error {
		switch v := o.(type) {
		case events.AssistantMessage:
			if v.Parent.ToolUseID != "" {
				return nil // a sub-agent's words are not the answer
			}
			for _, b := range v.Content {
				if t, ok := b.(events.TextBlock); ok {
					text.WriteString(t.Text)
					text.WriteByte('\n')
				}
			}
		case events.Result:
			res = &v
		}
		return nil
	}
	err := eng.Run(ctx, Request{Tenant: req.Tenant, RunID: uuid.NewString(), SessionID: uuid.NewString(),
		Workspace: req.Workspace, ConfigDir: req.ConfigDir, Model: req.Model, Provider: req.Provider, AccountID: req.AccountID,
		Prompt: []events.Block{events.TextBlock{Text: JSONPrompt(req.Prompt, req.Schema)}}, Ephemeral: true,
		Permissions: events.PermissionRules{Deny: []string{"*"}},
		Interaction: Unattended}, emit)
	switch {
	case err != nil:
		return nil, err
	case res == nil:
		return nil, Errorf(events.KindCrashed, "%s ended the generation without a result", eng.Type())
	case res.IsError():
		return nil, Errorf(events.KindProvider, "generation failed: %s", strings.Join(res.Errors, "; "))
	}
	doc, err := ExtractJSON(text.String())
	if err != nil {
		return nil, &Error{Kind: events.KindProvider, Msg: fmt.Sprintf("read the model's answer: %v", err), Err: err}
	}
	return doc, nil
}

// Unattended is the Interaction of a turn nobody attends (a structured
// generation): every tool call is refused and no question is answered.
var Unattended Interaction = noTools{}

type noTools struct{}

func (noTools) AskUser(context.Context, string, events.AskUserQuestionInput) (map[string]string, error) {
	return nil, ErrNoAnswer
}

func (noTools) Permit(context.Context, PermissionRequest) (Decision, error) {
	return Decision{Message: "structured generation runs without tools"}, nil
}
