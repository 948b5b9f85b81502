package skills

import (
	"fmt"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
)

// Preamble advertises auto skills: what each is for and where its
// instructions are; the agent reads a SKILL.md only when it is relevant.
// Slash-only skills must not be passed in. Empty for no skills.
func Preamble(list []events.Skill) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Available Skills\n\n")
	b.WriteString("Skills are instructions for particular tasks. When a task matches a skill's description, " +
		"read its SKILL.md with your file-reading tool before you start and follow it; do not read skills that are not relevant.\n")
	for _, s := range list {
		fmt.Fprintf(&b, "\n- **%s** — %s\n  Instructions: %s\n", s.Name, oneLine(s.Description), plan.StoreSkillPath(s.Slug))
	}
	return strings.TrimRight(b.String(), "\n")
}

// SubagentsPreamble tells an engine that can delegate which subagents it has.
func SubagentsPreamble(list []events.Subagent) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("# Available Subagents\n\n")
	b.WriteString("You can hand a self-contained task to one of these subagents with the Agent tool, naming it as the subagent type.\n")
	for _, s := range list {
		fmt.Fprintf(&b, "\n- **%s** — %s", s.Slug, oneLine(s.Description))
	}
	return b.String()
}

// InstructionsSection is instructions as a prompt section under title.
func InstructionsSection(title, content string) string {
	content = strings.TrimSpace(content)
	if content == "" {
		return ""
	}
	return "# " + title + "\n\n" + content
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
