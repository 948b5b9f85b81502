package claude

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

func TestGenerateArgs(t *testing.T) {
	schema := json.RawMessage("{\n  \"type\": \"object\"\n}")
	args := generateArgs("claude-haiku-5-5", schema)
	want := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--model", "claude-haiku-5-5",
		"--tools", "", "--strict-mcp-config", "--no-session-persistence", "--json-schema", `{"type":"object"}`, "--effort", "low"}
	if !slices.Equal(args, want) {
		t.Errorf("generateArgs = %q\nwant %q", args, want)
	}
	// A model whose thinking can be turned off runs without it.
	if args := generateArgs("claude-sonnet-4-5", schema); !slices.Equal(args[len(args)-2:], []string{"--thinking", "disabled"}) {
		t.Errorf("generateArgs(sonnet-4-5) ends %q, want --thinking disabled", args[len(args)-2:])
	}
}

// TestStructured reads result lines the pinned CLI wrote for --json-schema
// turns (testdata/generate-*.result.json) and made-up variants.
func TestStructured(t *testing.T) {
	read := func(name string) Line {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		l, err := DecodeLine(b)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	// The model called StructuredOutput, with a control character in a string.
	doc, err := structured(read("generate-structured.result.json"))
	if err != nil || string(doc) != `{"message":"feat: add x\nline2 \u0001"}` {
		t.Errorf("structured output = %s, %v", doc, err)
	}
	// The model answered in text twice; the CLI gave up and reported success.
	text := read("generate-text.result.json")
	if _, err := structured(text); engine.KindOf(err) != events.KindProvider || !strings.Contains(err.Error(), "no structured output") {
		t.Errorf("text answer: err = %v, want a provider error about the missing structured output", err)
	}
	text.Result = "Here it is: ```json\n{\"message\": \"from text\"}\n```"
	if doc, err := structured(text); err != nil || string(doc) != `{"message":"from text"}` {
		t.Errorf("JSON in the result text = %s, %v", doc, err)
	}
	failed := Line{Type: "result", Subtype: "success", IsError: true, Result: "API Error: 500", APIErrorStatus: 500}
	if _, err := structured(failed); engine.KindOf(err) != events.KindProvider || !strings.Contains(err.Error(), "500") {
		t.Errorf("failed result: err = %v, want a provider error with the status", err)
	}
	auth := Line{Type: "result", Subtype: "success", IsError: true, Result: "Invalid API key", APIErrorStatus: 401}
	if _, err := structured(auth); engine.KindOf(err) != events.KindAuth {
		t.Errorf("auth failure: err = %v, want kind auth", err)
	}
}

func TestCatalog(t *testing.T) {
	cat := Catalog()
	if len(cat) != len(Models) || cat[0].ID != DefaultModel {
		t.Fatalf("Catalog() has %d models starting with %q; want %d starting with the default %s", len(cat), cat[0].ID, len(Models), DefaultModel)
	}
	for i, m := range cat {
		if m.ID != Models[i].ID || m.Provider != Provider || m.Engine != events.EngineClaudeCode {
			t.Errorf("entry %d = %s@%s (%s), want %s@%s", i, m.ID, m.Provider, m.Engine, Models[i].ID, Provider)
		}
		rc := m.Capabilities.ReasoningControl
		if rc == nil || len(rc.Levels) != len(Models[i].Levels) || !rc.Has(rc.Default) {
			t.Errorf("%s: reasoning control %+v does not follow the table", m.ID, rc)
		}
		if m.Limit.Input == 0 || m.Limit.Output == 0 || m.Cost == nil || m.Cost.Input == 0 {
			t.Errorf("%s: limits %+v and cost %+v must be known", m.ID, m.Limit, m.Cost)
		}
		if _, err := m.MarshalJSON(); err != nil {
			t.Errorf("%s does not encode: %v", m.ID, err)
		}
		// The run and the catalog clamp alike.
		for _, give := range []string{"", "off", "max", "bogus"} {
			if got, want := engine.ClampEffort(m, give), ClampLevel(m.ID, give); got != want {
				t.Errorf("%s: ClampEffort(%q) = %q, the adapter clamps to %q", m.ID, give, got, want)
			}
		}
	}
	if label := cat[0].Capabilities.ReasoningControl.Levels[4].Label; label != "X-High" {
		t.Errorf("xhigh is labelled %q, want X-High", label)
	}
}
