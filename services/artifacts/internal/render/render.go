// Package render compiles a tenant's artifacts into the render plan of one
// engine: it walks the capability matrix rows of the engine and dispatches
// on each row's shape. Pure: the caller loads the data.
package render

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/matrix"
	"clopen.dev/services/artifacts/internal/resolve"
	"clopen.dev/services/artifacts/internal/skills"
)

// Skill is a skill with the files of its folder (SKILL.md included), by
// path relative to the folder.
type Skill struct {
	events.Skill
	Files map[string]string
}

// Input is everything a plan is compiled from.
type Input struct {
	Engine    events.EngineType
	Revision  int64
	Skills    []Skill           // every skill of the tenant
	Subagents []events.Subagent // every subagent of the tenant
	Global    events.Instructions
	Project   events.Instructions
	Profile   *resolve.Profile
	// Permissions are the merged rules for the run's project and profile.
	Permissions events.PermissionRules
}

// active is what the profile and the enabled flags leave for the run.
type active struct {
	invocable  []Skill // every active skill
	advertised []Skill // active skills with the auto trigger
	subagents  []events.Subagent
	allSkills  []string // every skill slug: what Clopen manages in shared dirs
	allAgents  []string
}

func resolveActive(in Input) active {
	var a active
	sf := resolve.ArtifactFilter(in.Profile, events.ArtifactSkill)
	for _, s := range sortedSkills(in.Skills) {
		a.allSkills = append(a.allSkills, s.Slug)
		if !sf.Active(s.Slug, s.Enabled) {
			continue
		}
		a.invocable = append(a.invocable, s)
		if skills.Has(s.Skill, events.SkillTriggerAuto) {
			a.advertised = append(a.advertised, s)
		}
	}
	af := resolve.ArtifactFilter(in.Profile, events.ArtifactSubagent)
	subs := slices.Clone(in.Subagents)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Slug < subs[j].Slug })
	for _, s := range subs {
		a.allAgents = append(a.allAgents, s.Slug)
		if af.Active(s.Slug, s.Enabled) {
			a.subagents = append(a.subagents, s)
		}
	}
	return a
}

// Plan compiles the render plan of in.Engine.
func Plan(in Input) (events.RenderPlan, error) {
	tr, ok := matrix.TraitsOf(in.Engine)
	if !ok {
		return events.RenderPlan{}, fmt.Errorf("render plan: unknown engine %q", in.Engine)
	}
	a := resolveActive(in)
	perms := in.Permissions
	if perms.Allow == nil {
		perms.Allow = []string{}
	}
	if perms.Deny == nil {
		perms.Deny = []string{}
	}
	p := events.RenderPlan{Engine: in.Engine, Revision: in.Revision, MemoryFile: tr.MemoryFile,
		Files: []events.PlanFile{}, Prune: []events.PlanPrune{}, Permissions: perms, MCPServers: []events.PlanMCPServer{}}
	advertised := skillsOf(a.advertised)

	// Sequential, as the original's sync: skills, subagents, instructions,
	// permissions (legacy commands are stripped by Apply at the end).
	for _, r := range matrix.Rows(events.ArtifactSkill, in.Engine, events.ScopeGlobal) {
		set := a.advertised
		if r.Set == matrix.Invocable {
			set = a.invocable
		}
		switch r.Shape {
		case matrix.FolderMD:
			p.Prune = append(p.Prune, events.PlanPrune{Dir: r.Path, Exclusive: r.Exclusive, Keep: slugs(set), Managed: a.allSkills})
			for _, s := range set {
				for _, name := range sortedKeys(s.Files) {
					p.Files = append(p.Files, events.PlanFile{Path: path.Join(r.Path, s.Slug, name), Content: s.Files[name],
						Mode: 0o644, Ownership: events.OwnWholeFile})
				}
			}
		case matrix.PreambleRegion:
			p.Files = append(p.Files, block(r, onDisk(tr, skills.Preamble(advertised))))
		}
	}
	for _, r := range matrix.Rows(events.ArtifactCommand, in.Engine, events.ScopeGlobal) {
		p.LegacyCommandDirs = append(p.LegacyCommandDirs, r.Path)
	}
	for _, r := range matrix.Rows(events.ArtifactSubagent, in.Engine, events.ScopeGlobal) {
		switch r.Shape {
		case matrix.SingleMD:
			var keep []string
			for _, s := range a.subagents {
				keep = append(keep, s.Slug+".md")
				p.Files = append(p.Files, events.PlanFile{Path: path.Join(r.Path, s.Slug+".md"),
					Content: subagentDoc(s, r.Dialect, in.Engine), Mode: 0o644, Ownership: events.OwnWholeFile})
			}
			managed := make([]string, len(a.allAgents))
			for i, s := range a.allAgents {
				managed[i] = s + ".md"
			}
			p.Prune = append(p.Prune, events.PlanPrune{Dir: r.Path, Exclusive: r.Exclusive, Keep: orEmpty(keep), Managed: managed})
		case matrix.PreambleRegion:
			p.Files = append(p.Files, block(r, onDisk(tr, skills.SubagentsPreamble(a.subagents))))
		}
	}
	global := ""
	if in.Global.Enabled {
		global = in.Global.Content
	}
	for _, r := range matrix.Rows(events.ArtifactInstruction, in.Engine, events.ScopeGlobal) {
		if r.Shape == matrix.PreambleRegion {
			p.Files = append(p.Files, block(r, global))
		}
	}
	for _, r := range matrix.Rows(events.ArtifactPermission, in.Engine, events.ScopeGlobal) {
		if r.Shape == matrix.JSONKeys {
			p.Files = append(p.Files, events.PlanFile{Path: r.Path, Content: managedKey(r.Key, perms), Ownership: events.OwnManagedKeys})
		}
	}
	p.PromptPreamble = preamble(in, tr, a, global)
	return p, nil
}

// preamble is what the prompt carries: instructions the engine does not
// read from disk, the synthetic skills and subagents blocks of a
// prompt-scoped engine, and the project instructions.
func preamble(in Input, tr matrix.Traits, a active, global string) string {
	var sections []string
	if !tr.ReadsGlobalMemoryFile {
		sections = append(sections, skills.InstructionsSection("Instructions", global))
	}
	if tr.PromptScoped {
		if _, ok := matrix.Synthetic(events.ArtifactSkill, in.Engine); ok {
			sections = append(sections, skills.Preamble(skillsOf(a.advertised)))
		}
		if _, ok := matrix.Synthetic(events.ArtifactSubagent, in.Engine); ok {
			sections = append(sections, skills.SubagentsPreamble(a.subagents))
		}
	}
	for _, r := range matrix.Rows(events.ArtifactInstruction, in.Engine, events.ScopeProject) {
		if r.Shape == matrix.Prompt && in.Project.Enabled {
			sections = append(sections, skills.InstructionsSection("Project Instructions", in.Project.Content))
		}
	}
	return skills.Join(sections...)
}

// onDisk is a synthetic block's content on disk: empty for prompt-scoped
// engines, which get it in the prompt.
func onDisk(tr matrix.Traits, content string) string {
	if tr.PromptScoped {
		return ""
	}
	return content
}

func block(r matrix.Row, content string) events.PlanFile {
	return events.PlanFile{Path: r.Path, Content: content, Ownership: events.OwnMarkerBlock, Region: r.Region}
}

func managedKey(key string, perms events.PermissionRules) string {
	var v any
	if len(perms.Allow)+len(perms.Deny) > 0 {
		v = perms
	}
	b, _ := json.Marshal(map[string]any{key: v})
	return string(b)
}

func skillsOf(list []Skill) []events.Skill {
	out := make([]events.Skill, len(list))
	for i, s := range list {
		out[i] = s.Skill
	}
	return out
}

func slugs(list []Skill) []string {
	out := []string{}
	for _, s := range list {
		out = append(out, s.Slug)
	}
	return out
}

func sortedSkills(in []Skill) []Skill {
	out := slices.Clone(in)
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
