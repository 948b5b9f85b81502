package plan

import (
	"strings"
	"testing"

	"clopen.dev/pkg/events"
)

func renderFixture() events.Content {
	return events.Content{Revision: 3,
		Skills: []events.ContentSkill{
			{Slug: "lint", Advertised: true, Files: map[string]string{"SKILL.md": "lint"}},
			{Slug: "deploy", Files: map[string]string{"SKILL.md": "deploy"}},
		},
		ManagedSkills: []string{"deploy", "lint", "old"},
		Subagents:     []events.ContentSubagent{{Slug: "tester", Documents: map[string]string{"claude": "C", "opencode": "O"}}},
		SkillsIndex:   "# Skills", SubagentsIndex: "# Subagents", Instructions: "Be brief.",
		InstructionsSection: "# Instructions\n\nBe brief.", ProjectSection: "# Project"}
}

func filesOf(p events.RenderPlan) map[string]events.PlanFile {
	out := map[string]events.PlanFile{}
	for _, f := range p.Files {
		out[f.Path+"#"+f.Region] = f
	}
	return out
}

// TestRenderPlacesThroughTheLayout: the store holds every active skill, a
// native dir only the advertised ones, a subagent row takes its dialect's
// document, and the prompt carries the project section.
func TestRenderPlacesThroughTheLayout(t *testing.T) {
	l := Layout{Engine: "e", MemoryFile: "MEM.md", ReadsMemoryFile: true, Rows: []Row{
		{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: "skills", Shape: FolderMD, Exclusive: true},
		{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "agents", Shape: SingleMD, Dialect: DialectOpenCode},
		{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: "MEM.md", Shape: PreambleRegion},
	}}
	p := Render(l, renderFixture())
	f := filesOf(p)
	for _, want := range []string{Store + "/lint/SKILL.md#", Store + "/deploy/SKILL.md#", "skills/lint/SKILL.md#"} {
		if _, ok := f[want]; !ok {
			t.Errorf("no %s in %v", want, f)
		}
	}
	if _, ok := f["skills/deploy/SKILL.md#"]; ok {
		t.Error("the slash-only skill is in the native dir")
	}
	if got := f["agents/tester.md#"].Content; got != "O" {
		t.Errorf("subagent document = %q, want the opencode one", got)
	}
	if got := f["MEM.md#"+RegionInstructions].Content; got != "Be brief." {
		t.Errorf("instructions block = %q", got)
	}
	if p.Engine != "e" || p.Revision != 3 || p.MemoryFile != "MEM.md" || p.PromptPreamble != "# Project" {
		t.Errorf("plan = %+v", p)
	}
}

// TestRenderPromptScoped: a prompt-scoped engine's blocks are empty on disk
// and their text is in the prompt, with the instructions when it does not
// read its memory file.
func TestRenderPromptScoped(t *testing.T) {
	l := Layout{Engine: "e", MemoryFile: "AGENTS.md", PromptScoped: true, Rows: []Row{
		{Type: events.ArtifactSkill, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion},
		{Type: events.ArtifactSubagent, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion},
		{Type: events.ArtifactInstruction, Scope: events.ScopeGlobal, Path: "AGENTS.md", Shape: PreambleRegion},
	}}
	p := Render(l, renderFixture())
	f := filesOf(p)
	if f["AGENTS.md#"+RegionSkills].Content != "" || f["AGENTS.md#"+RegionSubagents].Content != "" {
		t.Errorf("blocks on disk of a prompt-scoped engine: %v", f)
	}
	want := "# Instructions\n\nBe brief.\n\n# Skills\n\n# Subagents\n\n# Project"
	if p.PromptPreamble != want {
		t.Errorf("preamble = %q, want %q", p.PromptPreamble, want)
	}
	if strings.Contains(p.PromptPreamble, "deploy") {
		t.Error("the preamble names the slash-only skill")
	}
}
