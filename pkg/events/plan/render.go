package plan

import (
	"encoding/json"
	"path"
	"sort"
	"strings"

	"clopen.dev/pkg/events"
)

// Render places a run's content through an engine's layout: the plan Apply
// writes into the engine's config dir, and the prompt preamble. It walks the
// layout's global rows in the order of the original sync (skills, legacy
// commands, subagents, instructions, permissions) and dispatches on shape.
// Pure and deterministic: the same layout and content give the same plan.
func Render(l Layout, c events.Content) events.RenderPlan {
	perms := c.Permissions
	if perms.Allow == nil {
		perms.Allow = []string{}
	}
	if perms.Deny == nil {
		perms.Deny = []string{}
	}
	mcp := c.MCPServers
	if mcp == nil {
		mcp = []events.PlanMCPServer{}
	}
	p := events.RenderPlan{Engine: l.Engine, Revision: c.Revision, MemoryFile: l.MemoryFile,
		Files: []events.PlanFile{}, Prune: []events.PlanPrune{}, Permissions: perms, MCPServers: mcp}
	var advertised []events.ContentSkill
	for _, s := range c.Skills {
		if s.Advertised {
			advertised = append(advertised, s)
		}
	}

	// The canonical store, then the engine's own skill rows.
	placeSkills(&p, Store, true, c.Skills, c.ManagedSkills)
	for _, r := range l.Global(events.ArtifactSkill) {
		switch r.Shape {
		case FolderMD:
			placeSkills(&p, r.Path, r.Exclusive, advertised, c.ManagedSkills)
		case PreambleRegion:
			p.Files = append(p.Files, block(r, RegionSkills, onDisk(l, c.SkillsIndex)))
		}
	}
	for _, r := range l.Global(events.ArtifactCommand) {
		p.LegacyCommandDirs = append(p.LegacyCommandDirs, r.Path)
	}
	for _, r := range l.Global(events.ArtifactSubagent) {
		switch r.Shape {
		case SingleMD:
			keep := []string{}
			for _, s := range c.Subagents {
				keep = append(keep, s.Slug+".md")
				p.Files = append(p.Files, events.PlanFile{Path: path.Join(r.Path, s.Slug+".md"),
					Content: s.Documents[string(r.Dialect)], Mode: 0o644, Ownership: events.OwnWholeFile})
			}
			managed := make([]string, len(c.ManagedSubagents))
			for i, s := range c.ManagedSubagents {
				managed[i] = s + ".md"
			}
			p.Prune = append(p.Prune, events.PlanPrune{Dir: r.Path, Exclusive: r.Exclusive, Keep: keep, Managed: managed})
		case PreambleRegion:
			p.Files = append(p.Files, block(r, RegionSubagents, onDisk(l, c.SubagentsIndex)))
		}
	}
	for _, r := range l.Global(events.ArtifactInstruction) {
		if r.Shape == PreambleRegion {
			p.Files = append(p.Files, block(r, RegionInstructions, c.Instructions))
		}
	}
	for _, r := range l.Global(events.ArtifactPermission) {
		if r.Shape == JSONKeys {
			p.Files = append(p.Files, events.PlanFile{Path: r.Path, Content: managedKey(r.Key, perms), Ownership: events.OwnManagedKeys})
		}
	}
	p.PromptPreamble = preamble(l, c)
	return p
}

// placeSkills writes skills as folders under dir and prunes dir to them.
func placeSkills(p *events.RenderPlan, dir string, exclusive bool, skills []events.ContentSkill, managed []string) {
	keep := []string{}
	for _, s := range skills {
		keep = append(keep, s.Slug)
	}
	p.Prune = append(p.Prune, events.PlanPrune{Dir: dir, Exclusive: exclusive, Keep: keep, Managed: managed})
	for _, s := range skills {
		names := make([]string, 0, len(s.Files))
		for name := range s.Files {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			p.Files = append(p.Files, events.PlanFile{Path: path.Join(dir, s.Slug, name), Content: s.Files[name],
				Mode: 0o644, Ownership: events.OwnWholeFile})
		}
	}
}

// preamble is what the prompt carries: instructions the engine does not
// read from disk, the skills and subagents blocks of a prompt-scoped
// engine, and the project instructions.
func preamble(l Layout, c events.Content) string {
	var sections []string
	if !l.ReadsMemoryFile {
		sections = append(sections, c.InstructionsSection)
	}
	if l.PromptScoped {
		if l.Block(events.ArtifactSkill) {
			sections = append(sections, c.SkillsIndex)
		}
		if l.Block(events.ArtifactSubagent) {
			sections = append(sections, c.SubagentsIndex)
		}
	}
	sections = append(sections, c.ProjectSection)
	var out []string
	for _, s := range sections {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "\n\n")
}

// onDisk is a marker block's content on disk: empty for prompt-scoped
// engines, which get it in the prompt.
func onDisk(l Layout, content string) string {
	if l.PromptScoped {
		return ""
	}
	return content
}

func block(r Row, region, content string) events.PlanFile {
	return events.PlanFile{Path: r.Path, Content: content, Ownership: events.OwnMarkerBlock, Region: region}
}

func managedKey(key string, perms events.PermissionRules) string {
	var v any
	if len(perms.Allow)+len(perms.Deny) > 0 {
		v = perms
	}
	b, _ := json.Marshal(map[string]any{key: v})
	return string(b)
}
