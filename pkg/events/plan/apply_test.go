package plan

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

func TestApplyWritesPrunesAndStrips(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "skills/stale/SKILL.md"), "old")
	mustWrite(t, filepath.Join(dir, "skills/.keep"), "")
	mustWrite(t, filepath.Join(dir, "shared/mine/SKILL.md"), "user's own")
	mustWrite(t, filepath.Join(dir, "shared/gone/SKILL.md"), "clopen's, deleted")
	mustWrite(t, filepath.Join(dir, "commands/legacy.md"), "old command")
	mustWrite(t, filepath.Join(dir, "AGENTS.md"), "user\n\n"+StartMarker("COMMANDS")+"\nx\n"+EndMarker("COMMANDS")+"\n")
	mustWrite(t, filepath.Join(dir, "settings.json"), `{"theme":"dark","permissions":{"allow":["X"]}}`)
	p := events.RenderPlan{
		MemoryFile: "AGENTS.md",
		Prune: []events.PlanPrune{{Dir: "skills", Exclusive: true, Keep: []string{"review"}},
			{Dir: "shared", Keep: []string{"review"}, Managed: []string{"review", "gone"}}},
		Files: []events.PlanFile{
			{Path: "skills/review/SKILL.md", Content: "see " + events.ConfigDirToken + "/x", Mode: 0o644, Ownership: events.OwnWholeFile},
			{Path: "AGENTS.md", Content: "skills here", Ownership: events.OwnMarkerBlock, Region: RegionSkills},
			{Path: "settings.json", Content: `{"permissions":{"deny":["Bash"]}}`, Ownership: events.OwnManagedKeys},
		},
		LegacyCommandDirs: []string{"commands", "prompts"},
	}
	rep, err := Apply(dir, p)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(rep.Removed)
	if want := []string{"commands/legacy.md", "shared/gone", "skills/stale"}; !slices.Equal(rep.Removed, want) {
		t.Errorf("removed %v, want %v", rep.Removed, want)
	}
	if got := read(t, filepath.Join(dir, "skills/review/SKILL.md")); got != "see "+dir+"/x" {
		t.Errorf("SKILL.md = %q: the config dir token is not resolved", got)
	}
	for _, p := range []string{"skills/.keep", "shared/mine/SKILL.md"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Errorf("%s pruned: %v", p, err)
		}
	}
	agents := read(t, filepath.Join(dir, "AGENTS.md"))
	if strings.Contains(agents, "COMMANDS") || !strings.HasPrefix(agents, "user\n\n"+StartMarker("SKILLS")) {
		t.Errorf("AGENTS.md = %q", agents)
	}
	if got := read(t, filepath.Join(dir, "settings.json")); got != "{\n  \"permissions\": {\n    \"deny\": [\n      \"Bash\"\n    ]\n  },\n  \"theme\": \"dark\"\n}\n" {
		t.Errorf("settings.json = %q", got)
	}
	// A second apply of the same plan changes nothing.
	rep, err = Apply(dir, p)
	if err != nil || rep.Changed() {
		t.Errorf("second apply = %+v, %v; want no change", rep, err)
	}
}

func TestApplyRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"../x", "/etc/passwd", "a/../../x", "link/x", "", ".", "a//b", `a\b`} {
		_, err := Apply(dir, events.RenderPlan{Files: []events.PlanFile{{Path: path, Content: "x"}}})
		if !errors.Is(err, ErrUnsafePath) {
			t.Errorf("path %q: err = %v, want ErrUnsafePath", path, err)
		}
	}
	if _, err := Apply(dir, events.RenderPlan{Prune: []events.PlanPrune{{Dir: "link", Exclusive: true}}}); !errors.Is(err, ErrUnsafePath) {
		t.Errorf("prune through a symlink: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) > 0 {
		t.Errorf("wrote outside the config dir: %v", entries)
	}
	if _, err := Apply("relative/dir", events.RenderPlan{}); err == nil {
		t.Error("relative config dir accepted")
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
