package artifacts

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
)

func TestPlanNarrowsByProfileOnlyForReferencedTypes(t *testing.T) {
	e := start(t)
	c := newCaller()
	e.putSkill(c, "lint", "Lint.", "auto")
	e.putSkill(c, "review", "Review.", "auto")
	off := false
	e.must(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: "hidden", Description: "Hidden.", Body: "x"}, Enabled: &off}, nil)
	e.must(events.OpSubagentsPut, events.SubagentPut{Caller: c, Subagent: events.Subagent{Slug: "tester", Description: "Tests."}}, nil)
	e.must(events.OpSubagentsPut, events.SubagentPut{Caller: c, Subagent: events.Subagent{Slug: "writer", Description: "Writes."}}, nil)
	var onlyAgents, onlyHidden events.Profile
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: c, Profile: events.Profile{Name: "Agents",
		Items: []events.ProfileItem{{Type: "subagent", Ref: "tester"}}}}, &onlyAgents)
	e.must(events.OpProfilesPut, events.ProfilePut{Caller: c, Profile: events.Profile{Name: "Agents",
		Items: []events.ProfileItem{{Type: "skill", Ref: "hidden"}}}}, &onlyHidden)
	if onlyHidden.Slug != "agents-2" {
		t.Errorf("second profile slug = %q, want agents-2", onlyHidden.Slug)
	}
	// What the scripted engine, prompt-scoped, is told in its prompt.
	plan := func(profile string) string {
		var got events.Content
		e.must(events.OpContent, events.ContentRequest{Caller: c, Engine: events.EngineScripted, ProfileID: profile}, &got)
		return got.SkillsIndex + "\n\n" + got.SubagentsIndex
	}
	// Scenario 91: the profile names only subagents; every enabled skill stays.
	got := plan(onlyAgents.ID)
	for _, want := range []string{"**lint**", "**review**", "**tester**"} {
		if !strings.Contains(got, want) {
			t.Errorf("profile of subagents: preamble lacks %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "**hidden**") || strings.Contains(got, "**writer**") {
		t.Errorf("profile of subagents: disabled skill or unreferenced subagent present:\n%s", got)
	}
	got = plan(onlyHidden.ID)
	if !strings.Contains(got, "**hidden**") || strings.Contains(got, "**lint**") || !strings.Contains(got, "**writer**") {
		t.Errorf("profile naming one disabled skill:\n%s", got)
	}
	// The picker follows the same rules; only slash skills are listed.
	e.putSkill(c, "deploy", "Deploy $1.", "slash")
	var avail []events.AvailableSkill
	e.must(events.OpSkillsAvailable, events.SkillsAvailable{Caller: c}, &avail)
	if len(avail) != 1 || avail[0].Slug != "deploy" {
		t.Errorf("available = %+v, want [deploy]", avail)
	}
	e.must(events.OpSkillsAvailable, events.SkillsAvailable{Caller: c, ProfileID: onlyHidden.ID}, &avail)
	if len(avail) != 0 {
		t.Errorf("available under a profile without deploy = %+v", avail)
	}
	var exp events.ExpandReply
	e.must(events.OpExpand, events.ExpandRequest{Caller: c, Prompt: events.Blocks{events.TextBlock{Text: "/deploy prod"}}}, &exp)
	if exp.ExpandedSkill != "deploy" || !strings.HasPrefix(exp.Prompt[0].(events.TextBlock).Text, "Deploy prod.") {
		t.Errorf("expand = %+v", exp)
	}
	// An unknown profile id means none, not an error.
	if got := plan(uuid.NewString()); !strings.Contains(got, "**lint**") {
		t.Errorf("unknown profile: %s", got)
	}
}

func TestCommandsImportIsIdempotent(t *testing.T) {
	e := start(t)
	c := newCaller()
	e.putSkill(c, "review", "The real review skill.", "auto")
	cmds := []events.LegacyCommand{{Slug: "review", Description: "Review", Body: "Review $ARGUMENTS", Enabled: true},
		{Slug: "deploy", Body: "Deploy $1", Enabled: true}}
	var out events.CommandsImported
	e.must(events.OpCommandsImport, events.CommandsImport{Caller: c, Commands: cmds}, &out)
	if out.Slugs["review"] != "review-command" || out.Slugs["deploy"] != "deploy" {
		t.Fatalf("slugs = %v", out.Slugs)
	}
	// Re-run with the command files gone (empty bodies): same skills, bodies kept.
	for i := range cmds {
		cmds[i].Body = ""
	}
	e.must(events.OpCommandsImport, events.CommandsImport{Caller: c, Commands: cmds}, &out)
	if out.Slugs["review"] != "review-command" || out.Slugs["deploy"] != "deploy" {
		t.Fatalf("re-run slugs = %v", out.Slugs)
	}
	var s events.Skill
	e.must(events.OpSkillsGet, events.ArtifactRef{Caller: c, Slug: "deploy"}, &s)
	if s.Body != "Deploy $1" || strings.Join(s.Triggers, ",") != "slash" {
		t.Errorf("deploy after re-run = %+v", s)
	}
	e.must(events.OpSkillsGet, events.ArtifactRef{Caller: c, Slug: "review"}, &s)
	if s.Body != "The real review skill." {
		t.Errorf("the existing review skill was overwritten: %q", s.Body)
	}
	var list []events.Skill
	e.must(events.OpSkillsList, events.ListRequest{Caller: c}, &list)
	if len(list) != 3 {
		t.Errorf("%d skills after two imports, want 3", len(list))
	}
}

func TestDetectAndAdopt(t *testing.T) {
	e := start(t)
	c := newCaller()
	real := filepath.Join(e.realHome, ".claude", "skills", "mine")
	write(t, filepath.Join(real, "SKILL.md"), "---\nname: mine\ndescription: My own skill.\n---\nDo it my way.\n")
	write(t, filepath.Join(e.realHome, ".claude", "agents", "helper.md"), "---\nname: helper\ndescription: Helps.\n---\nHelp.\n")
	outside := filepath.Join(t.TempDir(), "evil")
	write(t, filepath.Join(outside, "SKILL.md"), "---\nname: evil\ndescription: x\n---\n")
	if err := os.Symlink(outside, filepath.Join(e.realHome, ".claude", "skills", "evil")); err != nil {
		t.Fatal(err)
	}
	e.putSkill(c, "managed", "x", "auto")
	var found []events.DetectedArtifact
	e.must(events.OpDetect, events.DetectRequest{Caller: c, Type: "skill", Engine: events.EngineClaudeCode}, &found)
	byslug := map[string]events.DetectedArtifact{}
	for _, f := range found {
		byslug[f.Slug] = f
	}
	if !byslug["managed"].Managed || !byslug["mine"].Adoptable || byslug["mine"].Description != "My own skill." {
		t.Errorf("detect = %+v", found)
	}
	var got events.DetectedArtifact
	e.must(events.OpAdopt, events.AdoptRequest{Caller: c, Type: "skill", Engine: events.EngineClaudeCode, Path: real}, &got)
	link := filepath.Join(e.dataDir, "artifacts", c.TenantID, "skills", "mine")
	if target, err := os.Readlink(link); err != nil || target != real {
		t.Errorf("adopted entry = %q, %v; want a link to %s", target, err, real)
	}
	var content events.Content
	e.must(events.OpContent, events.ContentRequest{Caller: c, Engine: events.EngineClaudeCode}, &content)
	if !contentMentions(content, "Do it my way.") {
		t.Error("adopted skill not in the content")
	}
	// Escapes are refused: a link out of the real dir, a path elsewhere.
	for _, p := range []string{filepath.Join(e.realHome, ".claude", "skills", "evil"), outside, "relative/path", e.dataDir} {
		if err := e.call(events.OpAdopt, events.AdoptRequest{Caller: c, Type: "skill", Engine: events.EngineClaudeCode, Path: p}, nil); err == nil {
			t.Errorf("adopt %s accepted", p)
		}
	}
	e.must(events.OpAdopt, events.AdoptRequest{Caller: c, Type: "subagent", Engine: events.EngineClaudeCode,
		Path: filepath.Join(e.realHome, ".claude", "agents", "helper.md")}, &got)
	var sub events.Subagent
	e.must(events.OpSubagentsGet, events.ArtifactRef{Caller: c, Slug: "helper"}, &sub)
	if sub.Description != "Helps." || !strings.Contains(sub.Body, "Help.") {
		t.Errorf("adopted subagent = %+v", sub)
	}
	// An adopted skill is edited where it lives, not through Clopen.
	if err := e.call(events.OpSkillsPut, events.SkillPut{Caller: c, Skill: events.Skill{Slug: "mine", Description: "changed"}}, nil); status(err) != 409 {
		t.Errorf("editing an adopted skill: %v, want 409", err)
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
