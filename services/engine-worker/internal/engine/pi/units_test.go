package pi

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Models as the pinned pi describes them (testdata/get_available_models.json).
var (
	sonnet45 = ModelInfo{ID: "claude-sonnet-4-5", Reasoning: true}
	opus46   = ModelInfo{ID: "claude-opus-4-6", Reasoning: true, ThinkingLevelMap: map[string]json.RawMessage{"xhigh": json.RawMessage(`"max"`)}}
	haiku35  = ModelInfo{ID: "claude-3-5-haiku-latest"}
	// sparse drops levels its provider lacks (a null in the map).
	sparse = ModelInfo{ID: "sparse", Reasoning: true,
		ThinkingLevelMap: map[string]json.RawMessage{"minimal": json.RawMessage(`null`), "medium": json.RawMessage(`null`)}}
)

func TestLevels(t *testing.T) {
	tests := []struct {
		give ModelInfo
		want []string
	}{
		{sonnet45, []string{"off", "minimal", "low", "medium", "high"}},
		{opus46, []string{"off", "minimal", "low", "medium", "high", "xhigh"}}, // xhigh only where mapped
		{haiku35, []string{"off"}},
		{sparse, []string{"off", "low", "high"}},
	}
	for _, tt := range tests {
		if got := tt.give.Levels(); !slices.Equal(got, tt.want) {
			t.Errorf("%s.Levels() = %q, want %q", tt.give.ID, got, tt.want)
		}
	}
}

func TestClampThinking(t *testing.T) {
	tests := []struct {
		model      ModelInfo
		give, want string
	}{
		{sonnet45, "high", "high"},
		{sonnet45, "off", "off"},
		{sonnet45, "", "medium"},      // none: pi's default
		{sonnet45, "xhigh", "medium"}, // a level of another model: the default
		{sonnet45, "max", "medium"},   // another engine's level
		{opus46, "xhigh", "xhigh"},
		{haiku35, "high", "off"}, // no reasoning: thinking off
		{haiku35, "", "off"},
		{sparse, "minimal", "high"}, // the default is the level pi clamps medium to
		{sparse, "", "high"},
		{sparse, "low", "low"},
	}
	for _, tt := range tests {
		if got := ClampThinking(tt.model, tt.give); got != tt.want {
			t.Errorf("ClampThinking(%s, %q) = %q, want %q", tt.model.ID, tt.give, got, tt.want)
		}
	}
}

// TestEntries maps the pinned pi's answer to get_available_models: limits,
// inputs, prices, and a reasoning control only for models that reason.
func TestEntries(t *testing.T) {
	data, err := os.ReadFile("testdata/get_available_models.json")
	if err != nil {
		t.Fatal(err)
	}
	models, err := DecodeModels(data)
	if err != nil || len(models) == 0 {
		t.Fatalf("DecodeModels = %d models, %v", len(models), err)
	}
	entries := map[string]events.EngineModel{}
	for _, m := range models {
		e := m.Entry()
		if _, err := json.Marshal(e); err != nil {
			t.Errorf("entry %s does not encode: %v", m.ID, err)
		}
		entries[e.ID] = e
	}
	s45 := entries["claude-sonnet-4-5"]
	want := events.EngineModel{ID: "claude-sonnet-4-5", Name: "Claude Sonnet 4.5 (latest)", Provider: "anthropic", Engine: events.EnginePi,
		Limit: events.ModelLimit{Input: 200_000, Output: 64_000},
		Modalities: events.ModelModalities{Input: []events.Modality{events.ModalityText, events.ModalityImage},
			Output: []events.Modality{events.ModalityText}},
		Capabilities: events.ModelCapabilities{Reasoning: true, Tools: true, ReasoningControl: &events.ReasoningControl{
			Levels: []events.ReasoningLevel{{Value: "off", Label: "Off"}, {Value: "minimal", Label: "Minimal"}, {Value: "low", Label: "Low"},
				{Value: "medium", Label: "Medium"}, {Value: "high", Label: "High"}}, Default: "medium"}},
		Cost: &events.ModelCost{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}}
	if diff := cmp.Diff(want, s45); diff != "" {
		t.Errorf("claude-sonnet-4-5 entry (-want +got):\n%s", diff)
	}
	if rc := entries["claude-opus-4-6"].Capabilities.ReasoningControl; rc == nil || !rc.Has("xhigh") {
		t.Errorf("claude-opus-4-6 reasoning control = %+v, want xhigh among its levels", rc)
	}
	if h := entries["claude-3-5-haiku-latest"]; h.Capabilities.Reasoning || h.Capabilities.ReasoningControl != nil {
		t.Errorf("claude-3-5-haiku-latest capabilities = %+v, want no reasoning and no control", h.Capabilities)
	}
	if free := (ModelInfo{ID: "m", Cost: &events.ModelCost{}}).Entry(); free.Cost != nil {
		t.Errorf("an all-zero price = %+v, want none (unknown)", free.Cost)
	}
}

func TestCanonicalInput(t *testing.T) {
	tests := []struct {
		tool, give, want string
	}{
		{"read", `{"path":"a.go","offset":3}`, `{"filePath":"a.go","offset":3}`},
		{"write", `{"path":"a","content":"x"}`, `{"content":"x","filePath":"a"}`},
		{"edit", `{"path":"a","edits":[{"oldText":"o","newText":"n"}]}`, `{"filePath":"a","newString":"n","oldString":"o"}`},
		{"edit", `{"path":"a","edits":[{"oldText":"o","newText":"n"},{"oldText":"p","newText":"q"}]}`,
			`{"edits":[{"newText":"n","oldText":"o"},{"newText":"q","oldText":"p"}],"filePath":"a","newString":"n","oldString":"o"}`},
		{"bash", `{"command":"ls","timeout":2}`, `{"command":"ls","timeout":2000}`},
		{"grep", `{"pattern":"x","ignoreCase":true}`, `{"caseInsensitive":true,"pattern":"x"}`},
		{"mcp__s__t", `{"a":1}`, `{"a":1}`},
		{"bash", `[1]`, `{}`},
	}
	for _, tt := range tests {
		name := ToolName(tt.tool)
		if got := string(CanonicalInput(name, json.RawMessage(tt.give))); got != tt.want {
			t.Errorf("CanonicalInput(%s, %s) = %s, want %s", name, tt.give, got, tt.want)
		}
	}
	for raw, want := range map[string]string{"bash": "Bash", "find": "Glob", "ls": "List", "AskUserQuestion": "AskUserQuestion",
		"mcp__s__t": "mcp__s__t", "frobnicate": "Unknown:frobnicate"} {
		if got := ToolName(raw); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", raw, got, want)
		}
	}
}

func TestModelsJSON(t *testing.T) {
	tests := []struct {
		name string
		cred Credential
		want string
	}{
		{"anthropic at a base URL", Credential{API: APIAnthropic, APIKey: "sk-secret", BaseURL: "http://h:1/"},
			`{"providers":{"anthropic":{"apiKey":"CLOPEN_PI_API_KEY","baseUrl":"http://h:1"}}}`},
		{"anthropic itself", Credential{APIKey: "k"}, `{"providers":{"anthropic":{"apiKey":"CLOPEN_PI_API_KEY"}}}`},
		{"chat completions", Credential{API: APIOpenAICompletions, APIKey: "k"},
			`{"providers":{"clopen":{"api":"openai-completions","apiKey":"CLOPEN_PI_API_KEY","baseUrl":"https://api.openai.com/v1","models":[{"id":"m1","reasoning":true}]}}}`},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal(modelsJSON(tt.cred, "m1"), &v); err != nil {
			t.Fatal(err)
		}
		got, _ := json.Marshal(v)
		if string(got) != tt.want {
			t.Errorf("%s: models.json = %s, want %s", tt.name, got, tt.want)
		}
	}
}

func TestEnvCredentials(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	if _, err := (EnvCredentials{Getenv: env()}).Credential(context.Background(), "", ""); engine.KindOf(err) != events.KindNeedsAccount {
		t.Errorf("no credentials: %v, want needs_account", err)
	}
	tests := []struct {
		give EnvCredentials
		want Credential
	}{
		{EnvCredentials{Getenv: env("ANTHROPIC_API_KEY", "a")}, Credential{API: APIAnthropic, APIKey: "a"}},
		{EnvCredentials{Getenv: env("CLOPEN_PI_API", "openai-completions", "OPENAI_API_KEY", "o", "ANTHROPIC_API_KEY", "a")},
			Credential{API: APIOpenAICompletions, APIKey: "o"}},
		{EnvCredentials{Getenv: env("CLOPEN_LLM_BASE_URL", "http://l")}, Credential{API: APIAnthropic, APIKey: PlaceholderKey, BaseURL: "http://l"}},
		{EnvCredentials{Getenv: env("ANTHROPIC_API_KEY", "a", "ANTHROPIC_BASE_URL", "http://x"), BaseURL: "http://y"},
			Credential{API: APIAnthropic, APIKey: "a", BaseURL: "http://y"}},
	}
	for _, tt := range tests {
		got, err := tt.give.Credential(context.Background(), "", "")
		if err != nil || got != tt.want {
			t.Errorf("Credential = %+v, %v; want %+v", got, err, tt.want)
		}
	}
}

func TestErrorText(t *testing.T) {
	tests := []struct {
		give, want string
		kind       events.ErrorKind
	}{
		{`500 {"error":{"message":"boom","type":"api_error"},"type":"error"}`, "boom (status 500)", events.KindProvider},
		{`429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "slow down (status 429)", events.KindRateLimited},
		{`401 invalid x-api-key`, "invalid x-api-key (status 401)", events.KindAuth},
		{`Connection error.`, "Connection error.", events.KindProvider},
		{`terminated`, "the connection to the model API closed before the response ended (pi: terminated)", events.KindProvider},
		{`model: claude-nope not found`, "model: claude-nope not found", events.KindModelUnavailable},
	}
	for _, tt := range tests {
		got := errorText(tt.give)
		if got != tt.want {
			t.Errorf("errorText(%q) = %q, want %q", tt.give, got, tt.want)
		}
		if k := engine.KindOf(turnError(got)); k != tt.kind {
			t.Errorf("turnError(%q) kind = %s, want %s", got, k, tt.kind)
		}
	}
}

func TestFindSession(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "2026-11-29T20-48-40-166Z_01a2-abc.jsonl")
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got, ok := findSession(dir, "01a2-abc"); !ok || got != name {
		t.Errorf("findSession = %q, %v; want %q", got, ok, name)
	}
	for _, id := range []string{"", "*", "01a2", "../x"} {
		if _, ok := findSession(dir, id); ok {
			t.Errorf("findSession(%q) found a session", id)
		}
	}
}

func TestMCPStatus(t *testing.T) {
	servers := []engine.MCPServer{{Name: "a", URL: "http://a"}, {Name: "b", URL: "http://b", Headers: map[string]string{"X": "1"}}}
	if got := string(mcpJSON(servers)); got != `[{"name":"a","url":"http://a"},{"name":"b","url":"http://b","headers":{"X":"1"}}]` {
		t.Errorf("mcpJSON = %s", got)
	}
	report := filepath.Join(t.TempDir(), "status.json")
	if err := os.WriteFile(report, []byte(`{"a":"connected","b":"failed"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	want := []events.MCPServer{{Name: "a", Status: events.MCPConnected}, {Name: "b", Status: events.MCPFailed}}
	if got := mcpStatus(servers, report); len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("mcpStatus = %+v, want %+v", got, want)
	}
	if got := mcpStatus(servers, filepath.Join(t.TempDir(), "missing")); got[0].Status != events.MCPFailed {
		t.Errorf("mcpStatus without a report = %+v, want failed", got)
	}
	if mcpFingerprint(nil) != "" || mcpFingerprint(servers) == mcpFingerprint(servers[:1]) {
		t.Error("mcpFingerprint does not tell server sets apart")
	}
}
