package skills

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/services/artifacts/internal/resolve"
)

func skill(slug, body string, triggers []string, uses ...string) events.Skill {
	return events.Skill{Slug: slug, Name: slug, Description: slug + " skill", Triggers: triggers, Uses: uses, Body: body, Enabled: true}
}

var (
	slash = []string{events.SkillTriggerSlash}
	both  = []string{events.SkillTriggerAuto, events.SkillTriggerSlash}
	auto  = []string{events.SkillTriggerAuto}
)

func catalog(ss ...events.Skill) Catalog {
	c := Catalog{Skills: map[string]events.Skill{}}
	for _, s := range ss {
		c.Skills[s.Slug] = s
	}
	return c
}

func text(s string) events.Blocks { return events.Blocks{events.TextBlock{Text: s}} }

func TestExpand(t *testing.T) {
	c := catalog(
		skill("review-pr", "Review PR #$1 carefully.", slash),
		skill("deploy", "Deploy the service.", both),
		skill("greet", "Say hi to $ARGUMENTS ($1/$2/$3).", slash),
		skill("quiet", "Only auto.", auto),
	)
	tests := []struct {
		name, give string
		wantSlug   string
		wantHas    []string
		wantNot    []string
	}{
		// Scenario 82.
		{"positional argument", "/review-pr 123", "review-pr", []string{"Review PR #123 carefully."}, []string{"# Arguments"}},
		// Scenario 83.
		{"no placeholder: arguments section", "/deploy prod now", "deploy", []string{"Deploy the service.\n\n# Arguments\n\nprod now"}, nil},
		{"no arguments: no section", "/deploy", "deploy", []string{"Deploy the service."}, []string{"# Arguments"}},
		{"quoting groups words", `/greet "Ada Lovelace" 'and Bob'`, "greet",
			[]string{`Say hi to "Ada Lovelace" 'and Bob' (Ada Lovelace/and Bob/).`}, []string{"# Arguments"}},
		{"missing arguments are empty", "/greet", "greet", []string{"Say hi to  (//)."}, nil},
		{"leading blanks and trailing newline", "  /deploy x\n", "deploy", []string{"# Arguments\n\nx"}, nil},
		{"multi-line arguments", "/greet a\nb", "greet", []string{"Say hi to a\nb (a/b/)."}, nil},
		{"trailer names the invocation", "/review-pr 7", "review-pr", []string{"`/review-pr 7`", folder("review-pr")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, slug := Expand(text(tt.give), c)
			if slug != tt.wantSlug {
				t.Fatalf("slug = %q, want %q", slug, tt.wantSlug)
			}
			out := got[0].(events.TextBlock).Text
			for _, w := range tt.wantHas {
				if !strings.Contains(out, w) {
					t.Errorf("expansion lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(out, w) {
					t.Errorf("expansion has %q:\n%s", w, out)
				}
			}
		})
	}
}

func folder(slug string) string { return strings.TrimSuffix(plan.StoreSkillPath(slug), "/SKILL.md") }

func TestNotAnInvocation(t *testing.T) {
	c := catalog(skill("usr", "x", slash), skill("quiet", "x", auto), skill("off", "x", slash))
	off := c.Skills["off"]
	off.Enabled = false
	c.Skills["off"] = off
	for _, give := range []string{"/usr/bin", "/", "/ usr", "hello /usr", "/Usr", "/quiet now", "/unknown", "/off", "/usr-", "//usr"} {
		got, slug := Expand(text(give), c)
		if slug != "" || !cmp.Equal(got, text(give)) {
			t.Errorf("Expand(%q) = %q, %v; want unchanged", give, slug, got)
		}
	}
	// Only the first text block counts; other blocks are kept.
	img := events.ImageBlock{MediaType: "image/png", Data: "AA=="}
	got, slug := Expand(events.Blocks{img, events.TextBlock{Text: "/usr now"}}, c)
	if slug != "usr" || got[0] != events.Block(img) {
		t.Errorf("image then invocation: %q, %v", slug, got)
	}
}

// TestUsesIsTransitiveAndCycleSafe is scenario 84: A uses B, C; C uses A.
func TestUsesIsTransitiveAndCycleSafe(t *testing.T) {
	c := catalog(skill("a", "Do A.", slash, "b", "c"), skill("b", "B.", auto, "d"), skill("c", "C.", auto, "a"),
		skill("d", "D.", slash), skill("e", "E.", auto))
	if got := Required("a", c); !cmp.Equal(got, []string{"b", "c", "d"}) {
		t.Errorf("Required(a) = %v, want [b c d]", got)
	}
	got, _ := Expand(text("/a"), c)
	out := got[0].(events.TextBlock).Text
	for _, s := range []string{"b", "c"} {
		if n := strings.Count(out, plan.StoreSkillPath(s)); n != 1 {
			t.Errorf("%s listed %d times:\n%s", s, n, out)
		}
	}
	if strings.Contains(out, plan.StoreSkillPath("a")) || !strings.HasPrefix(out, "# Required skills") {
		t.Errorf("invoked skill listed, or no required block first:\n%s", out)
	}
	// Missing, disabled and out-of-profile skills are skipped.
	c2 := catalog(skill("a", "x", slash, "gone", "b", "c"), skill("b", "", auto), skill("c", "", auto))
	b := c2.Skills["b"]
	b.Enabled = false
	c2.Skills["b"] = b
	if got := Required("a", c2); !cmp.Equal(got, []string{"c"}) {
		t.Errorf("Required with missing and disabled = %v, want [c]", got)
	}
	c2.Filter = resolve.Filter{"a": true, "b": true}
	if got := Required("a", c2); !cmp.Equal(got, []string{"b"}) {
		t.Errorf("Required under a profile = %v, want [b] (profile-referenced even if disabled)", got)
	}
}

func TestProfileDecidesInvocability(t *testing.T) {
	off := skill("off", "x", slash)
	off.Enabled = false
	c := catalog(off, skill("on", "y", slash))
	if _, ok := c.Invocable("off"); ok {
		t.Error("disabled skill invocable without a profile")
	}
	c.Filter = resolve.Filter{"off": true}
	if _, ok := c.Invocable("off"); !ok {
		t.Error("profile-referenced skill not invocable while disabled")
	}
	if _, ok := c.Invocable("on"); ok {
		t.Error("skill outside the profile's skills invocable")
	}
}

func TestSplitArgs(t *testing.T) {
	tests := []struct {
		give string
		want []string
	}{
		{"", nil},
		{"a  b\tc", []string{"a", "b", "c"}},
		{`"a b" c`, []string{"a b", "c"}},
		{`it's"x y"`, []string{"its\"x y\""}},
		{`''`, []string{""}},
	}
	for _, tt := range tests {
		if got := SplitArgs(tt.give); !cmp.Equal(got, tt.want) {
			t.Errorf("SplitArgs(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// TestSlashOnlySkillsNeverAdvertised is scenario 85 at the preamble level.
func TestPreambleLists(t *testing.T) {
	p := Preamble([]events.Skill{skill("deploy", "", both)})
	if !strings.Contains(p, "**deploy** — deploy skill") || !strings.Contains(p, plan.StoreSkillPath("deploy")) {
		t.Errorf("Preamble = %q", p)
	}
	if Preamble(nil) != "" || SubagentsPreamble(nil) != "" {
		t.Error("empty lists must give empty preambles")
	}
}
