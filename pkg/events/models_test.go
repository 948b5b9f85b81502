package events

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func ptr[T any](v T) *T { return &v }

// goldenModels are the expected values of testdata/models/*.json.
var goldenModels = map[string]EngineModel{
	"claude": {
		ID: "claude-opus-5-5", Name: "Claude Opus 5.5", Provider: "anthropic", Engine: EngineClaudeCode,
		Account:    AccountRef{ID: "acc-1", Name: "Work"},
		Limit:      ModelLimit{Input: 1_000_000, Output: 128_000},
		Modalities: ModelModalities{Input: []Modality{ModalityText, ModalityImage, ModalityPDF}, Output: []Modality{ModalityText}},
		Capabilities: ModelCapabilities{Reasoning: true, Tools: true, StructuredOutput: true,
			ReasoningControl: &ReasoningControl{Levels: ReasoningLevels("auto", "low", "medium", "high", "xhigh", "max"), Default: "auto"}},
		Cost: &ModelCost{Input: 5, Output: 25, CacheRead: 0.5, CacheWrite: 6.25},
	},
	"minimal": {
		ID: "scripted/hello", Engine: EngineScripted,
		Modalities: ModelModalities{Input: []Modality{}, Output: []Modality{}},
	},
	"unavailable": {
		ID: "opencode/big-pickle", Name: "Big Pickle", Provider: "opencode", Engine: EngineOpenCode,
		Modalities:   ModelModalities{Input: []Modality{ModalityText}, Output: []Modality{ModalityText}},
		Capabilities: ModelCapabilities{Tools: true},
		Unavailable:  "served by OpenCode Zen, not by the configured model endpoint",
	},
	"chatgpt_only": {
		ID: "gpt-5.5", Name: "GPT-5.5", Provider: "openai", Engine: EngineCodex,
		Limit:      ModelLimit{Input: 400_000},
		Modalities: ModelModalities{Input: []Modality{ModalityText}, Output: []Modality{ModalityText}},
		Capabilities: ModelCapabilities{Reasoning: true, Tools: true, RequiresAuthMode: AuthChatGPT,
			ReasoningControl: &ReasoningControl{Levels: ReasoningLevels("low", "medium", "high"), Default: "medium"}},
	},
}

func TestGoldenEngineModels(t *testing.T) {
	encode := func(m EngineModel) ([]byte, error) { return m.MarshalJSON() }
	for _, name := range sortedKeys(goldenModels) {
		t.Run(name, func(t *testing.T) {
			golden(t, filepath.Join("testdata", "models", name+".json"), goldenModels[name], encode, DecodeEngineModel)
		})
	}
}

// TestEngineModelInReplies: a catalog inside a ModelsReply goes through the
// strict codec both ways, and nil lists encode as [].
func TestEngineModelInReplies(t *testing.T) {
	b, err := json.Marshal(ModelsReply{Models: []EngineModel{{ID: "m", Engine: EngineScripted}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"modalities":{"input":[],"output":[]}`) {
		t.Errorf("encoded %s, want empty modality lists as []", b)
	}
	var back ModelsReply
	if err := json.Unmarshal(b, &back); err != nil || len(back.Models) != 1 || back.Models[0].ID != "m" {
		t.Errorf("round trip = %+v, %v", back, err)
	}
	err = json.Unmarshal([]byte(`{"models":[{"id":"m","engine":"nope"}]}`), &back)
	var de *DecodeError
	if !errors.As(err, &de) || de.Field != "engine" {
		t.Errorf("unknown engine in a reply: err = %v, want a DecodeError on engine", err)
	}
}

func TestEngineModelRefusals(t *testing.T) {
	tests := []struct {
		give, field string
	}{
		{`{"engine":"claude-code"}`, "id"},
		{`{"id":"m"}`, "engine"},
		{`{"id":"m","engine":"claude-code","modalities":{"input":["smell"]}}`, "modalities.input[0]"},
		{`{"id":"m","engine":"claude-code","limit":{"input":1.5}}`, "limit.input"},
		{`{"id":"m","engine":"claude-code","capabilities":{"requiresAuthMode":"sso"}}`, "capabilities.requiresAuthMode"},
		{`{"id":"m","engine":"claude-code","capabilities":{"reasoningControl":{"levels":[{"value":"low"}],"default":"high"}}}`,
			"capabilities.reasoningControl.default"},
		{`{"id":"m","engine":"claude-code","capabilities":{"reasoningControl":{"levels":[{"label":"Low"}],"default":""}}}`,
			"capabilities.reasoningControl.levels[0].value"},
		{`{"id":"m","engine":"claude-code","cost":{"input":"free"}}`, "cost.input"},
		{`[]`, ""},
	}
	for _, tt := range tests {
		_, err := DecodeEngineModel([]byte(tt.give))
		var de *DecodeError
		if !errors.As(err, &de) || de.Field != tt.field || de.Type != "engine model" {
			t.Errorf("DecodeEngineModel(%s) err = %v, want a DecodeError on %q", tt.give, err, tt.field)
		}
	}
	bad := []EngineModel{
		{Engine: EngineScripted},
		{ID: "m"},
		{ID: "m", Engine: EngineScripted, Modalities: ModelModalities{Output: []Modality{"smell"}}},
		{ID: "m", Engine: EngineScripted, Capabilities: ModelCapabilities{ReasoningControl: &ReasoningControl{Default: "high"}}},
	}
	for _, m := range bad {
		if b, err := m.MarshalJSON(); err == nil {
			t.Errorf("MarshalJSON(%+v) = %s, want an error", m, b)
		}
	}
}

func TestReasoningLevelLabel(t *testing.T) {
	tests := []struct{ give, want string }{
		{"off", "Off"}, {"auto", "Auto"}, {"minimal", "Minimal"}, {"xhigh", "X-High"}, {"max", "Max"},
		{"high", "High"}, {"thinking::deep", "thinking::deep"}, {"", ""},
	}
	for _, tt := range tests {
		if got := ReasoningLevelLabel(tt.give); got != tt.want {
			t.Errorf("ReasoningLevelLabel(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestEngineSubject(t *testing.T) {
	s, err := EngineSubject(EngineClaudeCode, OpModels)
	if err != nil || s != "svc.engine.claude-code.models" {
		t.Errorf("EngineSubject = %q, %v", s, err)
	}
	if _, err := EngineSubject("gpt", OpModels); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("EngineSubject(gpt) err = %v, want ErrUnknownEngine", err)
	}
	if _, err := EngineSubject(EngineScripted, "a.*"); !errors.Is(err, ErrBadToken) {
		t.Errorf("EngineSubject with a wildcard op err = %v, want ErrBadToken", err)
	}
}

// FuzzDecodeEngineModel is FuzzDecodeOutput for catalog entries, which
// dynamic catalogs fill from outside: decoding never panics, refuses only
// with a *DecodeError, and what it accepts encodes stably. The seed corpus
// is testdata/fuzz/FuzzDecodeEngineModel (see TestFuzzCorpus).
func FuzzDecodeEngineModel(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeEngineModel(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeEngineModel(%q) err = %v (%T), want a *DecodeError", data, err, err)
			}
			return
		}
		b1, err := m.MarshalJSON()
		if err != nil {
			t.Fatalf("encode(DecodeEngineModel(%q)) err = %v", data, err)
		}
		checkStable(t, b1, func(b []byte) ([]byte, error) {
			m, err := DecodeEngineModel(b)
			if err != nil {
				return nil, err
			}
			return m.MarshalJSON()
		})
	})
}
