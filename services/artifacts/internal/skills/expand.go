package skills

import (
	"fmt"
	"path"
	"regexp"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/services/artifacts/internal/resolve"
)

// Catalog is what slash expansion looks skills up in: the tenant's skills
// whose document could be read (Body filled), and the profile's skill
// filter.
type Catalog struct {
	Skills map[string]events.Skill
	Filter resolve.Filter
}

// Invocable reports whether slug may be run with /slug under the catalog's
// profile: it exists, has the slash trigger and is active (enabled, or
// referenced by the profile when the profile names skills).
func (c Catalog) Invocable(slug string) (events.Skill, bool) {
	s, ok := c.Skills[slug]
	if !ok || !Has(s, events.SkillTriggerSlash) || !c.Filter.Active(slug, s.Enabled) {
		return events.Skill{}, false
	}
	return s, true
}

// active reports whether slug is an active skill whatever its triggers
// (what a `uses` list may load).
func (c Catalog) active(slug string) bool {
	s, ok := c.Skills[slug]
	return ok && c.Filter.Active(slug, s.Enabled)
}

// invocation is the grammar of a slash invocation: the whole first text
// block is "/slug" or "/slug args", so "/usr/bin" and a lone "/" are not.
var invocation = regexp.MustCompile(`(?s)^[ \t]*/([a-z0-9]+(?:-[a-z0-9]+)*)(?:\s+(.*?))?\s*$`)

var placeholder = regexp.MustCompile(`\$(ARGUMENTS|[1-9])`)

// Expand rewrites the first text block of an engine prompt when it invokes a
// skill, and returns the new prompt and the skill's slug; otherwise the
// prompt as it was and "". It never fails: anything it cannot expand is
// sent as typed. The caller's slice is not modified.
func Expand(prompt events.Blocks, c Catalog) (events.Blocks, string) {
	idx := -1
	for i, b := range prompt {
		if _, ok := b.(events.TextBlock); ok {
			idx = i
			break
		}
	}
	if idx < 0 {
		return prompt, ""
	}
	m := invocation.FindStringSubmatch(prompt[idx].(events.TextBlock).Text)
	if m == nil {
		return prompt, ""
	}
	slug, args := m[1], strings.TrimSpace(m[2])
	s, ok := c.Invocable(slug)
	if !ok {
		return prompt, ""
	}
	out := append(events.Blocks(nil), prompt...)
	out[idx] = events.TextBlock{Text: expandText(s, args, c)}
	return out, slug
}

func expandText(s events.Skill, args string, c Catalog) string {
	words := SplitArgs(args)
	consumed := false
	body := placeholder.ReplaceAllStringFunc(s.Body, func(p string) string {
		consumed = true
		if p == "$ARGUMENTS" {
			return args
		}
		n := int(p[1] - '1')
		if n < len(words) {
			return words[n]
		}
		return ""
	})
	var b strings.Builder
	if req := Required(s.Slug, c); len(req) > 0 {
		b.WriteString("# Required skills\n\nBefore you start, read the instructions of these skills, in this order:\n")
		for _, r := range req {
			b.WriteString("- " + plan.StoreSkillPath(r) + "\n")
		}
		b.WriteString("\n")
	}
	b.WriteString(strings.TrimSpace(body))
	if !consumed && args != "" {
		b.WriteString("\n\n# Arguments\n\n" + args)
	}
	invoked := "/" + s.Slug
	if args != "" {
		invoked += " " + args
	}
	fmt.Fprintf(&b, "\n\n---\nThe user invoked the %s skill as `%s`. The skill's folder is %s.", s.Slug, invoked,
		path.Dir(plan.StoreSkillPath(s.Slug)))
	return b.String()
}

// Required lists the skills slug uses, breadth-first and transitively, each
// once, skipping missing and inactive skills and slug itself.
func Required(slug string, c Catalog) []string {
	seen := map[string]bool{slug: true}
	var out []string
	queue := []string{slug}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, u := range c.Skills[cur].Uses {
			if seen[u] || !c.active(u) {
				continue
			}
			seen[u] = true
			out = append(out, u)
			queue = append(queue, u)
		}
	}
	return out
}

// SplitArgs splits an argument string on whitespace; single or double
// quotes group words and are removed.
func SplitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n' || r == '\r':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}
