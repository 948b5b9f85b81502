package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
)

// sessionNew returns the first session/new answer in a transcript: the
// result that carries a sessionId.
func sessionNew(t *testing.T, file string) acp.NewSessionResponse {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 8<<20)
	for sc.Scan() {
		var line struct {
			Result *acp.NewSessionResponse `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && line.Result != nil && line.Result.SessionID != "" {
			return *line.Result
		}
	}
	t.Fatalf("%s has no session/new answer", file)
	return acp.NewSessionResponse{}
}

// brief is an entry as the tests compare it.
type brief struct {
	ID, Name, Provider string
	Levels             string // "low,medium*" : levels, the default starred
}

func briefs(models []events.EngineModel) []brief {
	out := []brief{}
	for _, m := range models {
		b := brief{ID: m.ID, Name: m.Name, Provider: m.Provider}
		if rc := m.Capabilities.ReasoningControl; rc != nil {
			for i, l := range rc.Levels {
				if i > 0 {
					b.Levels += ","
				}
				b.Levels += l.Value
				if l.Value == rc.Default {
					b.Levels += "*"
				}
			}
		}
		out = append(out, b)
	}
	return out
}

// TestCatalogFromTranscripts converts the session/new answers the pinned
// agents gave (recorded against fakellm) and the codex-acp capture, the
// only one with a thought_level option.
func TestCatalogFromTranscripts(t *testing.T) {
	custom := acp.Custom(acp.CustomConfig{Command: "codex-acp"})
	tests := []struct {
		profile    *acp.Profile
		file       string
		configured string
		want       []brief
	}{
		{&acp.Gemini, "testdata/record-gemini-hello.jsonl", "gemini-3.8-flash", []brief{
			{"gemini-3.8-flash", "gemini-3.8-flash", "google", ""},
			{"auto", "Auto", "google", ""},
			{"gemini-3.1-pro-preview-customtools", "gemini-3.1-pro-preview", "google", ""},
			{"gemini-3-flash-preview", "gemini-3-flash-preview", "google", ""},
			{"gemini-2.5-pro", "gemini-2.5-pro", "google", ""},
			{"gemini-3.5-flash-lite", "gemini-3.5-flash-lite", "google", ""},
		}},
		// coder-model needs the qwen-oauth auth type, which the adapter does
		// not run.
		{&acp.Qwen, "testdata/record-qwen-hello.jsonl", "fake-model", []brief{{"fake-model", "fake-model", "openai", ""}}},
		// No models and no model option: the configured model.
		{&acp.Copilot, "testdata/record-copilot-hello.jsonl", "fake-model", []brief{{"fake-model", "fake-model", "github-copilot", ""}}},
		{&acp.OpenCode, "testdata/record-opencode-hello.jsonl", "clopen/fake-model", []brief{
			{"clopen/fake-model", "Clopen/fake-model", "clopen", ""},
			{"opencode/big-pickle", "OpenCode Zen/Big Pickle", "opencode", ""},
			{"opencode/ling-3.0-flash-fin-free", "OpenCode Zen/Ling 3.0 Flash Fin Free", "opencode", ""},
			{"opencode/longcat-2.5-preview-free", "OpenCode Zen/LongCat 2.5 Preview Free", "opencode", ""},
			{"opencode/mimo-v2.6-flash-free", "OpenCode Zen/MiMo-V2.6-Flash Free", "opencode", ""},
			{"opencode/muse-spark-1.3-contributor-free", "OpenCode Zen/Muse Spark 1.3 Free", "opencode", ""},
			{"opencode/nemotron-3-ultra-free", "OpenCode Zen/Nemotron 3 Ultra Free", "opencode", ""},
			{"opencode/nemotron-3.5-lightning-free", "OpenCode Zen/Nemotron 3.5 Lightning Free", "opencode", ""},
			{"opencode/space-bunny-free", "OpenCode Zen/Space Bunny Free", "opencode", ""},
		}},
		// The model option, not the provider option of the same category;
		// Cline runs gpt-4o whatever CLINE_MODEL says when the model is not
		// in its list.
		{&acp.Cline, "testdata/record-cline-hello.jsonl", "fake-model", []brief{{"gpt-4o", "gpt-4o", "openai-compatible", ""}}},
		{custom, "testdata/capture-codex-acp.jsonl", "", []brief{
			{"gpt-5.5", "GPT-5.5", "acp", "low,medium*,high,xhigh"},
			{"gpt-5.4", "gpt-5.4", "acp", ""},
			{"gpt-5.4-mini", "GPT-5.4-Mini", "acp", ""},
			{"gpt-5.3-codex", "gpt-5.3-codex", "acp", ""},
			{"gpt-5.2", "gpt-5.2", "acp", ""},
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.profile.Type), func(t *testing.T) {
			got := acp.Catalog(tt.profile, sessionNew(t, tt.file), tt.configured)
			if diff := cmp.Diff(tt.want, briefs(got)); diff != "" {
				t.Errorf("catalog (-want +got):\n%s", diff)
			}
			for _, m := range got {
				if m.Engine != tt.profile.Type {
					t.Errorf("%s: engine %q", m.ID, m.Engine)
				}
				if _, err := m.MarshalJSON(); err != nil {
					t.Errorf("%s does not encode: %v", m.ID, err)
				}
			}
		})
	}
}

// TestCatalogMalformed: answers with missing, wrongly typed or unusable
// fields give what can be read, and the configured model when nothing can.
func TestCatalogMalformed(t *testing.T) {
	tests := []struct {
		name       string
		profile    *acp.Profile
		answer     string
		configured string
		want       []brief
	}{
		{"nothing", &acp.Gemini, `{"sessionId":"s"}`, "gemini-3.8-flash", []brief{{"gemini-3.8-flash", "gemini-3.8-flash", "google", ""}}},
		{"nothing, nothing configured", &acp.Gemini, `{"sessionId":"s"}`, "", []brief{}},
		{"empty models", &acp.Gemini, `{"models":{"availableModels":[],"currentModelId":""}}`, "m", []brief{{"m", "m", "google", ""}}},
		{"ids missing, names kept", &acp.Gemini, `{"models":{"availableModels":[{"name":"x"},{"modelId":"a"}],"currentModelId":"zz"}}`, "",
			[]brief{{"a", "a", "google", ""}}},
		{"duplicates", &acp.Gemini, `{"models":{"availableModels":[{"modelId":"a"},{"modelId":"a","name":"A"}],"currentModelId":"a"}}`, "",
			[]brief{{"a", "a", "google", ""}}},
		{"configured first when current is unknown", &acp.Gemini, `{"models":{"availableModels":[{"modelId":"a"},{"modelId":"b"}]}}`, "b",
			[]brief{{"b", "b", "google", ""}, {"a", "a", "google", ""}}},
		{"non-string option values", &acp.Gemini, `{"configOptions":[{"id":"model","category":"model","type":"select","currentValue":7,` +
			`"options":[{"value":7},{"value":null},{"value":"ok","name":"OK"}]}]}`, "", []brief{{"ok", "OK", "google", ""}}},
		{"grouped option values", &acp.Gemini, `{"configOptions":[{"id":"model","category":"model","type":"select","currentValue":"b",` +
			`"options":[{"group":"g1","name":"G1","options":[{"value":"a"}]},{"group":"g2","name":"G2","options":[{"value":"b"}]}]}]}`, "",
			[]brief{{"b", "b", "google", ""}, {"a", "a", "google", ""}}},
		{"option wins over models", &acp.Gemini, `{"models":{"availableModels":[{"modelId":"x"}],"currentModelId":"x"},` +
			`"configOptions":[{"id":"model","category":"model","type":"select","currentValue":"y","options":[{"value":"y"}]}]}`, "",
			[]brief{{"y", "y", "google", ""}}},
		{"a boolean model option is not a list", &acp.Gemini, `{"models":{"availableModels":[{"modelId":"x"}]},` +
			`"configOptions":[{"id":"model","category":"model","type":"boolean","currentValue":true}]}`, "",
			[]brief{{"x", "x", "google", ""}}},
		{"qwen: odd ids", &acp.Qwen, `{"models":{"availableModels":[{"modelId":"plain"},{"modelId":"$runtime|openai"},` +
			`{"modelId":"$runtime|openai|m(qwen-oauth)"},{"modelId":"(openai)"},{"modelId":"k(openai)"}],"currentModelId":"k(openai)"}}`, "q",
			[]brief{{"k", "k", "openai", ""}}},
		{"opencode: ids without a provider", &acp.OpenCode, `{"configOptions":[{"id":"model","category":"model","type":"select",` +
			`"currentValue":"p/m","options":[{"value":"bare"},{"value":"/m"},{"value":"p/"},{"value":"p/m","name":"P/M"}]}]}`, "",
			[]brief{{"p/m", "P/M", "p", ""}}},
		{"thought level: default not a level", &acp.Gemini, `{"models":{"availableModels":[{"modelId":"a"}],"currentModelId":"a"},` +
			`"configOptions":[{"id":"t","category":"thought_level","type":"select","currentValue":"max","options":[{"value":"low"}]}]}`, "",
			[]brief{{"a", "a", "google", ""}}},
		{"thought level: labels and odd values", &acp.Gemini, `{"models":{"availableModels":[{"modelId":"a"},{"modelId":"b"}],"currentModelId":"b"},` +
			`"configOptions":[{"id":"t","category":"thought_level","type":"select","currentValue":"hi","options":[{"value":"lo"},{"value":3},` +
			`{"value":"hi","name":"Hi"},{"value":"hi"}]}]}`, "",
			[]brief{{"b", "b", "google", "lo,hi*"}, {"a", "a", "google", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r acp.NewSessionResponse
			if err := json.Unmarshal([]byte(tt.answer), &r); err != nil {
				t.Fatalf("decode: %v", err)
			}
			got := acp.Catalog(tt.profile, r, tt.configured)
			if diff := cmp.Diff(tt.want, briefs(got)); diff != "" {
				t.Errorf("catalog (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReasoningClamp: a level the agent's thought_level option lacks
// clamps to the option's current value, in the agent's own vocabulary.
func TestReasoningClamp(t *testing.T) {
	r := sessionNew(t, "testdata/capture-codex-acp.jsonl")
	rc := acp.ReasoningOf(r.ConfigOptions)
	if rc == nil {
		t.Fatal("no reasoning control from codex-acp's reasoning_effort option")
	}
	if rc.Levels[3] != (events.ReasoningLevel{Value: "xhigh", Label: "Xhigh"}) {
		t.Errorf("levels = %+v, want the agent's labels", rc.Levels)
	}
	m := events.EngineModel{Capabilities: events.ModelCapabilities{ReasoningControl: rc}}
	for in, want := range map[string]string{"high": "high", "ultra": "medium", "": "medium", "xhigh": "xhigh"} {
		if got := engine.ClampEffort(m, in); got != want {
			t.Errorf("ClampEffort(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSubstituted: Cline lists gpt-4o only for an openai-compatible
// provider and runs it in place of any other model; a listed model, an
// agent that does not substitute, and an answer listing nothing stand.
func TestSubstituted(t *testing.T) {
	cline := sessionNew(t, "testdata/record-cline-hello.jsonl")
	if runs, ok := acp.Substituted(&acp.Cline, cline, "gpt-5.5"); !ok || runs != "gpt-4o" {
		t.Errorf("Cline asked for gpt-5.5 = %q, %v; want gpt-4o in its place", runs, ok)
	}
	if runs, ok := acp.Substituted(&acp.Cline, cline, "gpt-4o"); ok {
		t.Errorf("Cline asked for the listed gpt-4o = %q, substituted", runs)
	}
	if runs, ok := acp.Substituted(&acp.Cline, acp.NewSessionResponse{SessionID: "s"}, "gpt-5.5"); ok {
		t.Errorf("an answer listing no models = %q, substituted", runs)
	}
	qwen := sessionNew(t, "testdata/record-qwen-hello.jsonl")
	if runs, ok := acp.Substituted(&acp.Qwen, qwen, "other-model"); ok {
		t.Errorf("Qwen (which runs what it is given) = %q, substituted", runs)
	}
}

// TestCatalogMarksUnavailable: with a model endpoint configured, OpenCode's
// catalog marks the models of every other provider (opencode/* goes to
// OpenCode Zen), never offers one as the default, and a turn on one fails
// at once; without an endpoint they stay offered.
func TestCatalogMarksUnavailable(t *testing.T) {
	answer := sessionNew(t, "testdata/record-opencode-hello.jsonl")
	endpoint := acp.Credential{APIKey: "k", BaseURL: "http://127.0.0.1:1/v1"}
	// The agent's own default first, as if it had been configured so.
	got := acp.MarkUnavailable(&acp.OpenCode, acp.Catalog(&acp.OpenCode, answer, "opencode/big-pickle"), endpoint)
	if got[0].ID != "clopen/fake-model" || got[0].Unavailable != "" {
		t.Errorf("default = %s (unavailable %q), want clopen/fake-model, available", got[0].ID, got[0].Unavailable)
	}
	for _, m := range got[1:] {
		if m.Unavailable != "served by OpenCode Zen, not by the configured model endpoint" {
			t.Errorf("%s: unavailable = %q, want the OpenCode Zen reason", m.ID, m.Unavailable)
		}
		if b, err := m.MarshalJSON(); err != nil || !strings.Contains(string(b), `"unavailable":"served by OpenCode Zen`) {
			t.Errorf("%s encodes as %s, %v", m.ID, b, err)
		}
	}
	for _, m := range acp.MarkUnavailable(&acp.OpenCode, acp.Catalog(&acp.OpenCode, answer, ""), acp.Credential{APIKey: "k"}) {
		if m.Unavailable != "" {
			t.Errorf("without an endpoint %s is unavailable: %s", m.ID, m.Unavailable)
		}
	}

	e := acp.New(acp.Config{Process: engine.Process{Bin: "/nonexistent/opencode", StateDir: t.TempDir()}, Profile: &acp.OpenCode, Credentials: acp.EnvCredentials{Profile: &acp.OpenCode, BaseURL: endpoint.BaseURL}}, engine.Key{Engine: events.EngineOpenCode})
	err := e.Run(context.Background(), engine.Request{RunID: "r", SessionID: "s", Workspace: t.TempDir(), Model: "opencode/big-pickle",
		Prompt: []events.Block{events.TextBlock{Text: "hi"}}}, func(events.Output) error { return nil })
	if engine.KindOf(err) != events.KindModelUnavailable || !strings.Contains(err.Error(), "OpenCode Zen") {
		t.Errorf("a turn on opencode/big-pickle = %v (kind %s), want model_unavailable naming OpenCode Zen", err, engine.KindOf(err))
	}
}
