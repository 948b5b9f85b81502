package render

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/services/artifacts/internal/resolve"
	"clopen.dev/services/artifacts/internal/skills"
)

var update = flag.Bool("update", false, "rewrite the golden trees")

func skillDoc(s events.Skill) Skill {
	return Skill{Skill: s, Files: map[string]string{"SKILL.md": skills.Render(nil, s)}}
}

// fixture holds one artifact of every kind the matrix has rows for.
func fixture(engine events.EngineType) Input {
	mk := func(slug, body string, enabled bool, triggers ...string) Skill {
		return skillDoc(events.Skill{Slug: slug, Name: slug, Description: "The " + slug + " skill.", Triggers: triggers, Body: body, Enabled: enabled})
	}
	review := mk("review", "Review the change.\n", true, "auto", "slash")
	review.Skill.Uses = []string{"lint"}
	review.Files = map[string]string{"SKILL.md": skills.Render(nil, review.Skill), "checklist.md": "- tests\n"}
	return Input{
		Engine:   engine,
		Revision: 7,
		Skills: []Skill{review, mk("lint", "Run the linter.\n", true, "auto"),
			mk("deploy", "Deploy $1.\n", true, "slash"), mk("old", "Disabled.\n", false, "auto")},
		Subagents: []events.Subagent{{Slug: "tester", Name: "tester", Description: "Writes and runs tests.", Body: "You write tests.",
			Model: "default-model", ModelByEngine: map[string]string{"claude-code": "sonnet"},
			ToolsByEngine: map[string][]string{"claude-code": {"Read", "Bash"}}, Enabled: true}},
		Global:      events.Instructions{Scope: events.ScopeGlobal, Content: "Be concise.", Enabled: true},
		Project:     events.Instructions{Scope: events.ScopeProject, Content: "Use Go 1.26.", Enabled: true},
		Permissions: resolve.MergePermissions(events.PermissionRules{Deny: []string{"Bash"}}),
	}
}

// TestGoldenTrees materialises every engine's plan of the fixture into a
// config dir holding user text and stale entries, and compares the tree and
// the preamble with testdata/golden/<engine>.
func TestGoldenTrees(t *testing.T) {
	for _, engine := range events.EngineTypes() {
		t.Run(string(engine), func(t *testing.T) {
			p, err := Plan(fixture(engine))
			if err != nil {
				t.Fatal(err)
			}
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

// TestProfileNarrowsOnlyWhatItNames checks scenario 91 and the skill side
// of profiles on the compiled plan.
func TestProfileNarrowsOnlyWhatItNames(t *testing.T) {
	in := fixture(events.EngineScripted)
	in.Profile = resolve.NewProfile("p", []events.ProfileItem{{Type: events.ArtifactSubagent, Ref: "tester"}})
	p, _ := Plan(in)
	for _, s := range []string{"review", "lint"} {
		if !strings.Contains(p.PromptPreamble, "**"+s+"**") {
			t.Errorf("profile without skills hid skill %s:\n%s", s, p.PromptPreamble)
		}
	}
	in.Profile = resolve.NewProfile("p", []events.ProfileItem{{Type: events.ArtifactSkill, Ref: "old"}})
	p, _ = Plan(in)
	if !strings.Contains(p.PromptPreamble, "**old**") || strings.Contains(p.PromptPreamble, "**review**") {
		t.Errorf("profile naming only the disabled skill old:\n%s", p.PromptPreamble)
	}
	if !strings.Contains(p.PromptPreamble, "**tester**") {
		t.Errorf("profile without subagents hid the subagent:\n%s", p.PromptPreamble)
	}
	var store []string
	for _, f := range p.Files {
		if strings.HasPrefix(f.Path, ".clopen/skills/") {
			store = append(store, f.Path)
		}
	}
	sort.Strings(store)
	if want := []string{".clopen/skills/old/SKILL.md"}; !cmp.Equal(store, want) {
		t.Errorf("store files = %v, want %v", store, want)
	}
}

// TestSlashOnlyNeverAdvertised is scenario 85: on every engine a
// slash-only skill is in the store (for /deploy) but in no preamble, block
// or native skills dir; and scenario 89: no subagent text for engines that
// cannot delegate.
func TestSlashOnlyNeverAdvertised(t *testing.T) {
	for _, engine := range events.EngineTypes() {
		p, _ := Plan(fixture(engine))
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
		p, _ := Plan(fixture(engine))
		if !strings.Contains(p.PromptPreamble, "# Instructions\n\nBe concise.") {
			t.Errorf("%s: preamble lacks the global instructions:\n%s", engine, p.PromptPreamble)
		}
	}
	p, _ := Plan(fixture(events.EngineClaudeCode))
	if strings.Contains(p.PromptPreamble, "Be concise.") || !strings.Contains(p.PromptPreamble, "Use Go 1.26.") {
		t.Errorf("claude-code preamble = %q: want project instructions only", p.PromptPreamble)
	}
}
