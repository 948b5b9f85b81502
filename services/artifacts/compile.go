package artifacts

import (
	"context"
	"errors"
	"sort"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/artifacts/internal/content"
	"clopen.dev/services/artifacts/internal/resolve"
	"clopen.dev/services/artifacts/internal/skills"
	"clopen.dev/services/artifacts/internal/store"
)

// profile resolves the run's effective profile. A profile that no longer
// exists (deleted while a session still names it) means no profile: the run
// goes on with the tenant's enabled artifacts, and the log says so.
func (a *api) profile(ctx context.Context, t, project, requested string) (*resolve.Profile, error) {
	p, err := a.st.EffectiveProfile(ctx, t, project, requested)
	if errors.Is(err, store.ErrNotFound) {
		a.log.WarnContext(ctx, "profile not found; using none", "tenant", t, "profile_id", requested)
		return nil, nil
	}
	return p, err
}

func profileID(p *resolve.Profile) string {
	if p == nil {
		return ""
	}
	return p.ID
}

// content compiles the content of a run. The revision is read first, so
// the content is at least as new as the revision it reports.
func (a *api) content(ctx context.Context, t string, r events.ContentRequest) (events.Content, error) {
	if !r.Engine.Valid() {
		return events.Content{}, svc.Invalid("engine %q: unknown", r.Engine)
	}
	if c, _ := svc.ClaimsFrom(ctx); string(r.Engine) != c.Engine || r.ProjectID != c.ProjectID {
		return events.Content{}, svc.Unauthorized("run %s may read the content of its own %s run in project %s, not %s in %s",
			c.RunID, c.Engine, c.ProjectID, r.Engine, r.ProjectID)
	}
	rev, err := a.st.Revision(ctx, t)
	if err != nil {
		return events.Content{}, err
	}
	prof, err := a.profile(ctx, t, r.ProjectID, r.ProfileID)
	if err != nil {
		return events.Content{}, err
	}
	in := content.Input{Engine: r.Engine, Revision: rev, Profile: prof}
	var warnings []string
	if in.Skills, warnings, err = a.st.LoadSkills(ctx, t); err != nil {
		return events.Content{}, err
	}
	for _, w := range warnings {
		a.log.WarnContext(ctx, "skill left out of the content", "tenant", t, "reason", w)
	}
	if in.Subagents, err = a.st.ListSubagents(ctx, t); err != nil {
		return events.Content{}, err
	}
	if in.Global, err = a.st.GetInstructions(ctx, t, events.ScopeGlobal, ""); err != nil {
		return events.Content{}, err
	}
	if r.ProjectID != "" {
		if in.Project, err = a.st.GetInstructions(ctx, t, events.ScopeProject, r.ProjectID); err != nil {
			return events.Content{}, err
		}
	}
	if in.Permissions, err = a.st.ResolvePermissions(ctx, t, r.ProjectID, profileID(prof)); err != nil {
		return events.Content{}, err
	}
	c := content.Compile(in)
	if c.MCPServers, err = a.runMCPServers(ctx, t, r, prof); err != nil {
		return events.Content{}, err
	}
	return c, nil
}

// runMCPServers are the external MCP servers a run gets, by slug (the
// worker gives each its URL through its MCP proxy): the project's and the
// tenant's enabled servers, only those the profile names when it names
// any, and only those exposed to the run's engine; the first
// events.MaxRunMCPServers of them by slug.
func (a *api) runMCPServers(ctx context.Context, t string, r events.ContentRequest, prof *resolve.Profile) ([]events.PlanMCPServer, error) {
	all, err := a.st.RunMCPServers(ctx, t, r.ProjectID)
	if err != nil {
		return nil, err
	}
	f := resolve.ArtifactFilter(prof, events.ArtifactMCP)
	out := []events.PlanMCPServer{}
	for _, d := range all {
		if f.Active(d.Slug, true) && d.Exposure.Allows(string(r.Engine)) {
			out = append(out, events.PlanMCPServer{Name: d.Slug})
		}
	}
	if len(out) > events.MaxRunMCPServers {
		a.log.WarnContext(ctx, "run gets only the first MCP servers", "tenant", t, "project", r.ProjectID,
			"servers", len(out), "max", events.MaxRunMCPServers, "left_out_from", out[events.MaxRunMCPServers].Name)
		out = out[:events.MaxRunMCPServers]
	}
	return out, nil
}

// catalog is what slash expansion and the picker see.
func (a *api) catalog(ctx context.Context, t, project, profile string) (skills.Catalog, error) {
	prof, err := a.profile(ctx, t, project, profile)
	if err != nil {
		return skills.Catalog{}, err
	}
	loaded, _, err := a.st.LoadSkills(ctx, t)
	if err != nil {
		return skills.Catalog{}, err
	}
	c := skills.Catalog{Skills: map[string]events.Skill{}, Filter: resolve.ArtifactFilter(prof, events.ArtifactSkill)}
	for _, s := range loaded {
		c.Skills[s.Slug] = s.Skill
	}
	return c, nil
}

// expand rewrites a /slug invocation in an engine prompt.
func (a *api) expand(ctx context.Context, t string, r events.ExpandRequest) (events.ExpandReply, error) {
	c, err := a.catalog(ctx, t, r.ProjectID, r.ProfileID)
	if err != nil {
		return events.ExpandReply{}, err
	}
	prompt, slug := skills.Expand(r.Prompt, c)
	return events.ExpandReply{Prompt: prompt, ExpandedSkill: slug}, nil
}

// available lists the skills the user may invoke with /slug.
func (a *api) available(ctx context.Context, t string, r events.SkillsAvailable) ([]events.AvailableSkill, error) {
	c, err := a.catalog(ctx, t, r.ProjectID, r.ProfileID)
	if err != nil {
		return nil, err
	}
	out := []events.AvailableSkill{}
	for slug := range c.Skills {
		if s, ok := c.Invocable(slug); ok {
			out = append(out, events.AvailableSkill{Slug: s.Slug, Name: s.Name, Description: s.Description, ArgumentHint: s.ArgumentHint})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Slug < out[j].Slug })
	return out, nil
}
