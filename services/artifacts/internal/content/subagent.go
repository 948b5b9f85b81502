package content

import (
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/services/artifacts/internal/frontmatter"
)

// subagentDoc writes a subagent in dialect d, with engine's model and tool
// overrides applied.
func subagentDoc(s events.Subagent, d plan.Dialect, engine events.EngineType) string {
	model := s.Model
	if m := s.ModelByEngine[string(engine)]; m != "" {
		model = m
	}
	tools := s.Tools
	if t, ok := s.ToolsByEngine[string(engine)]; ok {
		tools = t
	}
	doc := &frontmatter.Doc{HasFrontmatter: true}
	switch d {
	case plan.DialectOpenCode:
		doc.Set("description", oneLine(s.Description))
		doc.Set("mode", "subagent")
		if model != "" {
			doc.Set("model", model)
		}
	default: // claude
		doc.Set("name", s.Slug)
		doc.Set("description", oneLine(s.Description))
		if len(tools) > 0 {
			doc.Set("tools", strings.Join(tools, ", "))
		}
		if model != "" {
			doc.Set("model", model)
		}
	}
	doc.Body = strings.TrimRight(s.Body, "\n") + "\n"
	return doc.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
