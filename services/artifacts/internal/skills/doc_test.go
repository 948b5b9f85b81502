package skills

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
)

func TestParseSkill(t *testing.T) {
	src := "\ufeff---\nname: review-pr\ndescription: >\n  Reviews a pull\n  request.\nlicense: MIT\nallowed-tools: Read, Grep\nmetadata:\n  author: ada\ntriggers: slash, auto\nargument-hint: <number>\nuses: [lint, test]\nx-custom: kept\n---\nBody $1\n"
	s, doc, err := Parse("review-pr", src)
	if err != nil {
		t.Fatal(err)
	}
	want := events.Skill{Slug: "review-pr", Name: "review-pr", Description: "Reviews a pull request.", License: "MIT",
		AllowedTools: "Read, Grep", Metadata: map[string]string{"author": "ada"}, Triggers: []string{"slash", "auto"},
		ArgumentHint: "<number>", Uses: []string{"lint", "test"}, Body: "Body $1\n"}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Errorf("Parse (-want +got):\n%s", diff)
	}
	s.Description = "Reviews PRs"
	s.Triggers = []string{"slash"}
	out := Render(doc, s)
	if !strings.Contains(out, "x-custom: kept\n") || !strings.Contains(out, "description: Reviews PRs\n") || !strings.Contains(out, "triggers: slash\n") {
		t.Errorf("Render lost or mis-wrote keys:\n%s", out)
	}
	back, _, err := Parse("review-pr", out)
	if err != nil || back.Description != "Reviews PRs" || !cmp.Equal(back.Uses, []string{"lint", "test"}) {
		t.Errorf("re-parse = %+v, %v", back, err)
	}
	// Absent triggers mean auto.
	s2, _, err := Parse("a", "---\nname: a\ndescription: d\n---\n")
	if err != nil || !cmp.Equal(s2.Triggers, []string{"auto"}) {
		t.Errorf("default triggers = %v, %v", s2.Triggers, err)
	}
}

func TestValidateSkill(t *testing.T) {
	base := "---\nname: a\ndescription: d\n---\n"
	for name, src := range map[string]string{
		"name differs from folder": "---\nname: b\ndescription: d\n---\n",
		"no description":           "---\nname: a\n---\n",
		"angle brackets":           "---\nname: a\ndescription: <b>\n---\n",
		"bad trigger":              "---\nname: a\ndescription: d\ntriggers: sometimes\n---\n",
		"empty triggers":           "---\nname: a\ndescription: d\ntriggers: \"\"\n---\n",
		"bad uses":                 "---\nname: a\ndescription: d\nuses: Not A Slug\n---\n",
		"long description":         "---\nname: a\ndescription: " + strings.Repeat("x", 1025) + "\n---\n",
		"syntax":                   "---\nname a\n---\n",
	} {
		if _, _, err := Parse("a", src); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, _, err := Parse("a", base); err != nil {
		t.Errorf("valid skill: %v", err)
	}
	for _, s := range []string{"", "A", "a--b", "-a", "a-", strings.Repeat("a", 65), "../x", "a/b"} {
		if ValidSlug(s) {
			t.Errorf("ValidSlug(%q) = true", s)
		}
	}
}

// TestImportCommands covers the commands → skills migration: collisions,
// idempotence, and never blanking a body (scenario 86).
func TestImportCommands(t *testing.T) {
	existing := map[string]events.Skill{"review": {Slug: "review", Body: "a real skill"}}
	cmds := []events.LegacyCommand{
		{Slug: "review", Name: "Review", Description: "Review <code>", Body: "Review $ARGUMENTS", Enabled: true},
		{Slug: "deploy", ArgumentHint: "<env>", Body: "Deploy $1", Enabled: true},
		{Slug: "empty"},
	}
	got, warnings := ImportCommands(cmds, existing, nil)
	slugs := map[string]string{}
	for _, im := range got {
		slugs[im.Command] = im.Skill.Slug
		if err := Validate(im.Skill); err != nil {
			t.Errorf("%s: imported skill invalid: %v", im.Command, err)
		}
		if !cmp.Equal(im.Skill.Triggers, []string{"slash"}) || !im.Created {
			t.Errorf("%s: %+v", im.Command, im)
		}
	}
	if diff := cmp.Diff(map[string]string{"review": "review-command", "deploy": "deploy", "empty": "empty"}, slugs); diff != "" {
		t.Errorf("slugs (-want +got):\n%s", diff)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "empty") {
		t.Errorf("warnings = %v", warnings)
	}
	// Re-run after the command files were deleted (empty bodies): same slugs,
	// bodies kept from the skills.
	after := map[string]events.Skill{"review": existing["review"]}
	for _, im := range got {
		after[im.Skill.Slug] = im.Skill
	}
	rerun := []events.LegacyCommand{{Slug: "review"}, {Slug: "deploy"}}
	again, _ := ImportCommands(rerun, after, slugs)
	for _, im := range again {
		if im.Skill.Slug != slugs[im.Command] || im.Created || strings.TrimSpace(im.Skill.Body) == "" {
			t.Errorf("re-run of %s = %+v: want the same skill with its body", im.Command, im.Skill)
		}
	}
	// A second collision gets -command-2.
	taken := map[string]bool{"x": true, "x-command": true}
	if got := freeSlug("x", taken); got != "x-command-2" {
		t.Errorf("freeSlug = %q, want x-command-2", got)
	}
	if got := freeSlug(strings.Repeat("a", 64), map[string]bool{strings.Repeat("a", 64): true}); len(got) > 64 || !strings.HasSuffix(got, "-command") {
		t.Errorf("long freeSlug = %q", got)
	}
}
