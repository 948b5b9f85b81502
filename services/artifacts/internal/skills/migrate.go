package skills

import (
	"fmt"
	"strings"

	"clopen.dev/pkg/events"
)

// Imported is one legacy command turned into a skill.
type Imported struct {
	Command string       // the command's slug
	Skill   events.Skill // the skill to save (Body already resolved)
	Created bool         // false when the command was imported before
}

// ImportCommands turns legacy commands into slash skills (the commands →
// skills migration): same name and description (falling back to the slug),
// the argument hint, triggers slash. A slug already taken by another skill
// becomes <slug>-command, then <slug>-command-2…; a command imported before
// (recorded in prior: command slug -> skill slug) maps to the same skill
// again, so a re-run is idempotent. A command whose body is empty keeps
// the body the skill already has (a re-run after the command files were
// deleted never blanks a SKILL.md); existing maps a slug to the skill
// stored under it. Warnings name commands imported without any body.
func ImportCommands(cmds []events.LegacyCommand, existing map[string]events.Skill, prior map[string]string) ([]Imported, []string) {
	taken := map[string]bool{}
	for slug := range existing {
		taken[slug] = true
	}
	var out []Imported
	var warnings []string
	for _, c := range cmds {
		slug, again := prior[c.Slug]
		if !again {
			slug = freeSlug(c.Slug, taken)
		}
		taken[slug] = true
		name := slug
		desc := strings.TrimSpace(c.Description)
		if desc == "" {
			desc = strings.TrimSpace(c.Name)
		}
		if desc == "" {
			desc = c.Slug
		}
		desc = strings.NewReplacer("<", "(", ">", ")").Replace(oneLine(desc))
		if len(desc) > 1024 {
			desc = desc[:1024]
		}
		body := c.Body
		if strings.TrimSpace(body) == "" {
			body = existing[slug].Body
		}
		if strings.TrimSpace(body) == "" {
			warnings = append(warnings, fmt.Sprintf("command %s has no body; skill %s created empty", c.Slug, slug))
		}
		s := events.Skill{Slug: slug, Name: name, Description: desc, Triggers: []string{events.SkillTriggerSlash},
			ArgumentHint: c.ArgumentHint, Body: body, Enabled: c.Enabled, Source: "command"}
		if prev, ok := existing[slug]; ok && again {
			s.Enabled = prev.Enabled // a re-run keeps what the user toggled since
		}
		out = append(out, Imported{Command: c.Slug, Skill: s, Created: !again})
	}
	return out, warnings
}

// freeSlug returns slug, or the first free <slug>-command[-N], kept to 64
// characters.
func freeSlug(slug string, taken map[string]bool) string {
	if !ValidSlug(slug) {
		slug = sanitize(slug)
	}
	if !taken[slug] {
		return slug
	}
	for n := 1; ; n++ {
		suffix := "-command"
		if n > 1 {
			suffix = fmt.Sprintf("-command-%d", n)
		}
		base := slug
		if len(base)+len(suffix) > 64 {
			base = strings.TrimRight(base[:64-len(suffix)], "-")
		}
		if s := base + suffix; !taken[s] {
			return s
		}
	}
}

// sanitize makes a slug of an arbitrary name.
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 64 {
		out = strings.Trim(out[:64], "-")
	}
	if out == "" {
		out = "command"
	}
	return out
}
