// Package content resolves a tenant's artifacts into the content of one
// run (events.Content): the profile and the enabled flags applied, skills
// with their folders, subagents written in every dialect, the preambles and
// instructions as text. It places nothing: where each engine reads what is
// its adapter's layout, which the worker renders (pkg/events/plan.Render).
// Pure: the caller loads the data.
package content

import (
	"slices"
	"sort"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/events/plan"
	"clopen.dev/services/artifacts/internal/resolve"
	"clopen.dev/services/artifacts/internal/skills"
)

// Skill is a skill with the files of its folder (SKILL.md included), by
// path relative to the folder.
type Skill struct {
	events.Skill
	Files map[string]string
}

// Input is everything content is compiled from.
type Input struct {
	// Engine picks the subagents' per-engine model and tool overrides.
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

// Compile resolves the content of a run.
func Compile(in Input) events.Content {
	c := events.Content{Revision: in.Revision, Skills: []events.ContentSkill{}, ManagedSkills: []string{},
		Subagents: []events.ContentSubagent{}, ManagedSubagents: []string{}, Permissions: in.Permissions,
		MCPServers: []events.PlanMCPServer{}}
	var advertised []events.Skill
	sf := resolve.ArtifactFilter(in.Profile, events.ArtifactSkill)
	for _, s := range sortedSkills(in.Skills) {
		c.ManagedSkills = append(c.ManagedSkills, s.Slug)
		if !sf.Active(s.Slug, s.Enabled) {
			continue
		}
		auto := skills.Has(s.Skill, events.SkillTriggerAuto)
		if auto {
			advertised = append(advertised, s.Skill)
		}
		c.Skills = append(c.Skills, events.ContentSkill{Slug: s.Slug, Advertised: auto, Files: s.Files})
	}
	var active []events.Subagent
	af := resolve.ArtifactFilter(in.Profile, events.ArtifactSubagent)
	subs := slices.Clone(in.Subagents)
	sort.Slice(subs, func(i, j int) bool { return subs[i].Slug < subs[j].Slug })
	for _, s := range subs {
		c.ManagedSubagents = append(c.ManagedSubagents, s.Slug)
		if !af.Active(s.Slug, s.Enabled) {
			continue
		}
		active = append(active, s)
		docs := map[string]string{}
		for _, d := range plan.Dialects() {
			docs[string(d)] = subagentDoc(s, d, in.Engine)
		}
		c.Subagents = append(c.Subagents, events.ContentSubagent{Slug: s.Slug, Documents: docs})
	}
	c.SkillsIndex = skills.Preamble(advertised)
	c.SubagentsIndex = skills.SubagentsPreamble(active)
	if in.Global.Enabled {
		c.Instructions = in.Global.Content
		c.InstructionsSection = skills.InstructionsSection("Instructions", in.Global.Content)
	}
	if in.Project.Enabled {
		c.ProjectSection = skills.InstructionsSection("Project Instructions", in.Project.Content)
	}
	return c
}

func sortedSkills(in []Skill) []Skill {
	out := slices.Clone(in)
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out
}
