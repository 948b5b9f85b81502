package events

import (
	"errors"
	"fmt"
)

// EngineType names an agent engine: the "type" of a message's engine, the
// "engine" of system_init and of the chat events, and the token of a job
// subject (job.<engine>). The vocabulary is append-only.
type EngineType string

// The engine types.
const (
	EngineClaudeCode EngineType = "claude-code"
	EngineCodex      EngineType = "codex"
	EngineCopilot    EngineType = "copilot"
	EngineOpenCode   EngineType = "opencode"
	EngineQwen       EngineType = "qwen"
	EnginePi         EngineType = "pi"
	EngineCursor     EngineType = "cursor"
	EngineCline      EngineType = "cline"
	EngineGemini     EngineType = "gemini"
	EngineACP        EngineType = "acp"      // any agent spoken to over the Agent Client Protocol
	EngineScripted   EngineType = "scripted" // a replayed script, for tests and demos
)

var engineTypes = []EngineType{
	EngineClaudeCode, EngineCodex, EngineCopilot, EngineOpenCode, EngineQwen, EnginePi,
	EngineCursor, EngineCline, EngineGemini, EngineACP, EngineScripted,
}

// ErrUnknownEngine is wrapped by ParseEngineType for a name outside the
// vocabulary.
var ErrUnknownEngine = errors.New("unknown engine type")

// EngineTypes returns every engine type, in declaration order. The slice is a
// copy.
func EngineTypes() []EngineType { return append([]EngineType(nil), engineTypes...) }

// Valid reports whether t is one of the engine types. The empty type, which
// the wire allows where no engine is known, is not valid.
func (t EngineType) Valid() bool { return oneOf(t, engineTypes) }

// ParseEngineType returns s as an EngineType, or an error wrapping
// ErrUnknownEngine. Matching is exact: "Claude-Code" is not an engine.
func ParseEngineType(s string) (EngineType, error) {
	if t := EngineType(s); t.Valid() {
		return t, nil
	}
	return "", fmt.Errorf("parse engine type %q: %w", s, ErrUnknownEngine)
}

// MessageEngine says which engine, provider, model and account produced a
// message. The adapter fills Type, Provider and Model.ID; the stream manager
// fills Model.Name, Account and ReasoningEffort.
type MessageEngine struct {
	Type     EngineType `json:"type"`
	Provider string     `json:"provider"`
	Model    ModelRef   `json:"model"`
	Account  AccountRef `json:"account"`
	// ReasoningEffort is the engine's native effort token; it is omitted
	// (not null) when the engine has no effort knob.
	ReasoningEffort string `json:"reasoningEffort,omitempty"`
}

// ModelRef names a model: ID as the engine knows it, Name for display.
type ModelRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// AccountRef names the engine account a message was produced with.
type AccountRef struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

func decodeMessageEngine(d *dec) MessageEngine {
	m, a := d.obj("model"), d.obj("account")
	return MessageEngine{
		Type:            readEnum[EngineType](d, "type", false),
		Provider:        d.str("provider"),
		Model:           ModelRef{ID: m.str("id"), Name: m.str("name")},
		Account:         AccountRef{ID: a.str("id"), Name: a.str("name")},
		ReasoningEffort: d.str("reasoningEffort"),
	}
}
