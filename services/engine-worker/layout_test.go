package worker

import (
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

var update = flag.Bool("update", false, "rewrite the golden trees")

// contentDir holds the contract's golden contents of the artifacts
// fixture, one per engine; artifacts' own test compiles them.
const contentDir = "../../pkg/events/plan/testdata/content"

// fixture is the golden content of engine.
func fixture(t *testing.T, engine events.EngineType) events.Content {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(contentDir, string(engine)+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var c events.Content
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

// render places engine's golden content through its adapter's layout.
func render(t *testing.T, engine events.EngineType) events.RenderPlan {
	t.Helper()
	l, ok := layoutOf(engine)
	if !ok {
		t.Fatalf("%s: no layout", engine)
	}
	return plan.Render(l, fixture(t, engine))
}

// TestGoldenTrees places every engine's content through its adapter's
// layout into a config dir holding user text and stale entries, and
// compares the tree and the preamble with testdata/golden/<engine>.
func TestGoldenTrees(t *testing.T) {
	for _, engine := range events.EngineTypes() {
		t.Run(string(engine), func(t *testing.T) {
			p := render(t, engine)
			dir := t.TempDir()
			seed(t, dir, p.MemoryFile, "# My own notes\n\nKeep me.\n")
			seed(t, dir, "skills/stale/SKILL.md", "stale")
			seed(t, dir, "agents/gone.md", "stale")
			if _, err := plan.Apply(dir, p); err != nil {
				t.Fatal(err)
			}
			got := tree(t, dir)
			got["_preamble.md"] = p.PromptPreamble
			golden := filepath.Join("testdata", "golden", string(engine))
			if *update {
				if err := os.RemoveAll(golden); err != nil {
					t.Fatal(err)
				}
				for name, content := range got {
					seed(t, golden, name, content)
				}
			}
			want := tree(t, golden)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tree of %s (-want +got), run with -update to accept:\n%s", engine, diff)
			}
			// A second apply changes nothing (write-if-changed).
			if rep, err := plan.Apply(dir, p); err != nil || rep.Changed() {
				t.Errorf("second apply = %+v, %v", rep, err)
			}
		})
	}
}

func seed(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// tree reads every file under dir (lock files aside), with dir replaced by
// the config dir token.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".clopen-lock") {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[filepath.ToSlash(rel)] = strings.ReplaceAll(string(b), dir, events.ConfigDirToken)
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return out
}

// TestSlashOnlyNeverAdvertised is scenario 85: on every engine a
// slash-only skill is in the store (for /deploy) but in no preamble, block
// or native skills dir; and scenario 89: no subagent text for engines that
// cannot delegate.
func TestSlashOnlyNeverAdvertised(t *testing.T) {
	for _, engine := range events.EngineTypes() {
		p := render(t, engine)
		if strings.Contains(p.PromptPreamble, "deploy") {
			t.Errorf("%s: preamble advertises the slash-only skill", engine)
		}
		inStore := false
		for _, f := range p.Files {
			switch {
			case strings.HasPrefix(f.Path, ".clopen/skills/deploy/"):
				inStore = true
			case strings.Contains(f.Path, "deploy") || strings.Contains(f.Content, "**deploy**"):
				t.Errorf("%s: %s advertises the slash-only skill", engine, f.Path)
			}
			if engine == events.EngineCodex || engine == events.EngineCopilot || engine == events.EngineQwen {
				if strings.Contains(f.Content, "tester") {
					t.Errorf("%s: %s mentions a subagent", engine, f.Path)
				}
			}
		}
		if !inStore {
			t.Errorf("%s: slash-only skill missing from the store", engine)
		}
	}
}

// TestInstructionsInPromptForEnginesThatIgnoreMemory is scenario 90.
func TestInstructionsInPromptForEnginesThatIgnoreMemory(t *testing.T) {
	for _, engine := range []events.EngineType{events.EngineCline, events.EngineCursor} {
		p := render(t, engine)
		if !strings.Contains(p.PromptPreamble, "# Instructions\n\nBe concise.") {
			t.Errorf("%s: preamble lacks the global instructions:\n%s", engine, p.PromptPreamble)
		}
	}
	p := render(t, events.EngineClaudeCode)
	if strings.Contains(p.PromptPreamble, "Be concise.") || !strings.Contains(p.PromptPreamble, "Use Go 1.26.") {
		t.Errorf("claude-code preamble = %q: want project instructions only", p.PromptPreamble)
	}
}

// TestEveryEngineHasALayout checks each adapter's layout for every engine
// type of pkg/events: one instructions block in its memory file, every
// block there, and the traits of each engine.
func TestEveryEngineHasALayout(t *testing.T) {
	tests := []struct {
		give                           events.EngineType
		promptScoped, reads, delegates bool
	}{
		{events.EngineClaudeCode, false, true, true},
		{events.EngineCodex, true, true, false},
		{events.EngineCopilot, true, true, false},
		{events.EngineOpenCode, true, true, true},
		{events.EngineQwen, false, true, false},
		{events.EnginePi, false, true, true},
		{events.EngineCursor, true, false, true},
		{events.EngineCline, true, false, true},
		{events.EngineGemini, true, true, false},
		{events.EngineACP, true, false, false},
		{events.EngineScripted, true, true, true},
	}
	if len(tests) != len(events.EngineTypes()) {
		t.Errorf("%d engines checked, pkg/events has %d", len(tests), len(events.EngineTypes()))
	}
	for _, tt := range tests {
		l, ok := layoutOf(tt.give)
		if !ok || l.Engine != tt.give {
			t.Errorf("%s: layout %+v, %v", tt.give, l, ok)
			continue
		}
		if l.PromptScoped != tt.promptScoped || l.ReadsMemoryFile != tt.reads || l.Delegates() != tt.delegates {
			t.Errorf("%s: promptScoped %v reads %v delegates %v, want %v %v %v", tt.give, l.PromptScoped,
				l.ReadsMemoryFile, l.Delegates(), tt.promptScoped, tt.reads, tt.delegates)
		}
		if got := l.Global(events.ArtifactInstruction); len(got) != 1 || got[0].Path != l.MemoryFile || got[0].Shape != plan.PreambleRegion {
			t.Errorf("%s: instruction rows %+v, want one block in %s", tt.give, got, l.MemoryFile)
		}
		if len(l.Global(events.ArtifactSkill)) == 0 {
			t.Errorf("%s: no skill row", tt.give)
		}
		for _, r := range l.Rows {
			if r.Shape == plan.PreambleRegion && r.Path != l.MemoryFile {
				t.Errorf("%s: %s block in %s, memory file is %s", tt.give, r.Type, r.Path, l.MemoryFile)
			}
			if r.Type == events.ArtifactSubagent && r.Shape == plan.SingleMD && r.Dialect == "" {
				t.Errorf("%s: subagent row %+v has no dialect", tt.give, r)
			}
		}
	}
}
