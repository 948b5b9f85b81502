package content

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/resolve"
	"clopen.dev/services/artifacts/internal/skills"
)

var update = flag.Bool("update", false, "rewrite the golden contents")

// goldenDir holds the contract's golden contents of the fixture, one per
// engine. The engine worker places each through its engine's layout and
// compares the tree with its golden trees, so the two tests together cover
// artifacts → content → layout → config dir.
const goldenDir = "../../../../pkg/events/plan/testdata/content"

func skillDoc(s events.Skill) Skill {
	return Skill{Skill: s, Files: map[string]string{"SKILL.md": skills.Render(nil, s)}}
}

// fixture holds one artifact of every kind a layout places.
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

// TestGoldenContents compiles the fixture for every engine type and
// compares it with the golden content in the contract's testdata.
func TestGoldenContents(t *testing.T) {
	for _, engine := range events.EngineTypes() {
		t.Run(string(engine), func(t *testing.T) {
			b, err := json.MarshalIndent(Compile(fixture(engine)), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got := string(b) + "\n"
			file := filepath.Join(goldenDir, string(engine)+".json")
			if *update {
				if err := os.WriteFile(file, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("content of %s (-want +got), run with -update to accept:\n%s", engine, diff)
			}
		})
	}
}

func slugsOf(list []events.ContentSkill) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.Slug)
	}
	return out
}

// TestProfileNarrowsOnlyWhatItNames checks scenario 91 and the skill side
// of profiles on the compiled content.
func TestProfileNarrowsOnlyWhatItNames(t *testing.T) {
	in := fixture(events.EngineScripted)
	in.Profile = resolve.NewProfile("p", []events.ProfileItem{{Type: events.ArtifactSubagent, Ref: "tester"}})
	c := Compile(in)
	for _, s := range []string{"review", "lint"} {
		if !strings.Contains(c.SkillsIndex, "**"+s+"**") {
			t.Errorf("profile without skills hid skill %s:\n%s", s, c.SkillsIndex)
		}
	}
	in.Profile = resolve.NewProfile("p", []events.ProfileItem{{Type: events.ArtifactSkill, Ref: "old"}})
	c = Compile(in)
	if !strings.Contains(c.SkillsIndex, "**old**") || strings.Contains(c.SkillsIndex, "**review**") {
		t.Errorf("profile naming only the disabled skill old:\n%s", c.SkillsIndex)
	}
	if !strings.Contains(c.SubagentsIndex, "**tester**") {
		t.Errorf("profile without subagents hid the subagent:\n%s", c.SubagentsIndex)
	}
	if got, want := slugsOf(c.Skills), []string{"old"}; !cmp.Equal(got, want) || len(c.Skills[0].Files) != 1 || c.Skills[0].Files["SKILL.md"] == "" {
		t.Errorf("store skills = %v (%v), want %v with its SKILL.md", got, c.Skills, want)
	}
}

// TestSlashOnlyNeverAdvertised is scenario 85 on the content: a slash-only
// skill is active (the store holds it, for /deploy) but not advertised and
// in no index; the layouts' side is the worker's test.
func TestSlashOnlyNeverAdvertised(t *testing.T) {
	c := Compile(fixture(events.EngineScripted))
	i := slices.IndexFunc(c.Skills, func(s events.ContentSkill) bool { return s.Slug == "deploy" })
	if i < 0 || c.Skills[i].Advertised {
		t.Errorf("deploy in the content = %+v, want active and not advertised", c.Skills)
	}
	if strings.Contains(c.SkillsIndex, "deploy") || strings.Contains(c.SubagentsIndex, "deploy") {
		t.Errorf("an index advertises the slash-only skill:\n%s\n%s", c.SkillsIndex, c.SubagentsIndex)
	}
}

// TestSubagentsInEveryDialect: each active subagent is written in every
// dialect, with the requesting engine's overrides.
func TestSubagentsInEveryDialect(t *testing.T) {
	c := Compile(fixture(events.EngineClaudeCode))
	docs := c.Subagents[0].Documents
	if !strings.Contains(docs["claude"], "model: sonnet") || !strings.Contains(docs["claude"], "tools: Read, Bash") ||
		!strings.Contains(docs["opencode"], "mode: subagent") {
		t.Errorf("documents = %q", docs)
	}
}
