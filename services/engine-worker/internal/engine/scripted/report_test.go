package scripted

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// TestReportShowsPromptAndConfigFiles covers the report step of the
// artifacts scenario: one notification with the prompt and AGENTS.md.
func TestReportShowsPromptAndConfigFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("Be concise."), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	req := engine.Request{Model: "scripted/artifacts", ConfigDir: dir, Interaction: &answering{deny: true},
		Prompt: []events.Block{events.TextBlock{Text: "# Available Skills"}, events.TextBlock{Text: "hello"}}}
	if err := newEngine(t).Run(context.Background(), req, rec.emit); err != nil {
		t.Fatal(err)
	}
	var report string
	for _, o := range rec.out {
		if n, ok := o.(events.Notification); ok && n.Title == "Artifacts" {
			report = n.Message
		}
	}
	for _, want := range []string{"prompt:\n# Available Skills\n\nhello", "--- AGENTS.md ---\nBe concise."} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if _, err := ParseScenario([]byte(`{"name":"x","steps":[{"report":{"files":["../etc/passwd"]}}]}`)); err == nil {
		t.Error("report of a file outside the config dir accepted")
	}
}
