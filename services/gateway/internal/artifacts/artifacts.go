// Package artifacts is the gateway's side of the artifacts service: skills,
// subagents, instructions, permission sets, profiles, engine providers and
// accounts, external MCP servers and integration accounts, fetched and changed over svc.Call with the caller's
// events.Caller, built from its API key and nothing else, and the caller
// token the gateway signs for it (identity.Bus). artifacts scopes
// every request by that tenant; the gateway adds who may do what:
//
//   - any user of the tenant reads its tenant-wide artifacts;
//   - only tenant admins change them (skills, subagents, global
//     instructions and permissions, profiles and their permissions,
//     providers, accounts, integrations) and detect or adopt engine entries: a member
//     gets apierr.ErrForbidden;
//   - project-scoped ones (a project's instructions, permissions and
//     default profile) need a project the caller may use, else
//     apierr.ErrNotFound, and to change them its ownership or the admin
//     role (identity.Store.ManagedProject).
//
// The worker- and streammgr-internal operations (accounts.resolve, plan,
// expand) have no method here: they unseal credentials or compile plans.
package artifacts

import (
	"context"
	"errors"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Projects answers whether a principal may use or change a project.
type Projects interface {
	// Project returns the project if p may use it, else apierr.ErrNotFound.
	Project(ctx context.Context, p identity.Principal, id string) (api.Project, error)
	// ManagedProject is Project that also needs p to own the project or
	// administer the tenant, else apierr.ErrForbidden.
	ManagedProject(ctx context.Context, p identity.Principal, id string) (api.Project, error)
}

// Artifacts calls the artifacts service for authenticated principals. It is
// safe for concurrent use.
type Artifacts struct {
	bus      *identity.Bus
	projects Projects
}

// New returns an Artifacts calling the artifacts service over nc.
func New(bus *identity.Bus, projects Projects) *Artifacts {
	return &Artifacts{bus: bus, projects: projects}
}

// call sends req to svc.artifacts.<op>; op is one of the constants of
// pkg/events, never client input.
func (a *Artifacts) call(ctx context.Context, op string, req, resp any) error {
	subject, err := events.ServiceSubject(events.ArtifactsService, op)
	if err != nil {
		return err
	}
	return a.bus.Call(ctx, subject, req, resp)
}

// admin refuses a change of tenant-wide artifacts to a non-admin.
func admin(p identity.Principal, what string) error {
	if !p.IsAdmin() {
		return apierr.New(apierr.ErrForbidden, "only tenant admins may %s", what)
	}
	return nil
}

// named rewords the service's bare not-found to say what was not found.
// Errors the gateway classified itself pass unchanged.
func named(err error, kind, id string) error {
	var ae *events.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return apierr.New(apierr.ErrNotFound, "%s %q not found", kind, id)
	}
	return err
}

// mustCreate refuses to create what already exists: get reports whether it
// does (nil), or is not found.
func mustCreate(err error, kind, id string) error {
	switch {
	case err == nil:
		return apierr.New(apierr.ErrConflict, "%s %q already exists; PUT replaces it", kind, id)
	case errors.Is(err, apierr.ErrNotFound):
		return nil
	}
	return err
}

// sameSlug checks the slug of a PUT body against its path.
func sameSlug(body, path string) error {
	if body != "" && body != path {
		return apierr.New(apierr.ErrInvalid, "slug: %q in the body, %q in the path", body, path)
	}
	return nil
}

// Skills lists the tenant's skills without their bodies.
func (a *Artifacts) Skills(ctx context.Context, p identity.Principal) ([]events.Skill, error) {
	var out []events.Skill
	err := a.call(ctx, events.OpSkillsList, events.ListRequest{Caller: p.Caller()}, &out)
	return out, err
}

// Skill returns one skill with its whole document.
func (a *Artifacts) Skill(ctx context.Context, p identity.Principal, slug string) (events.Skill, error) {
	var s events.Skill
	err := a.call(ctx, events.OpSkillsGet, events.ArtifactRef{Caller: p.Caller(), Slug: slug}, &s)
	return s, named(err, "skill", slug)
}

// CreateSkill creates a skill (admins); a slug in use is a conflict.
func (a *Artifacts) CreateSkill(ctx context.Context, p identity.Principal, in api.SkillInput) (events.Skill, error) {
	if err := admin(p, "create skills"); err != nil {
		return events.Skill{}, err
	}
	if in.Slug == "" {
		return events.Skill{}, apierr.New(apierr.ErrInvalid, "slug: required")
	}
	_, err := a.Skill(ctx, p, in.Slug)
	if err := mustCreate(err, "skill", in.Slug); err != nil {
		return events.Skill{}, err
	}
	return a.putSkill(ctx, p, in.Slug, in)
}

// ReplaceSkill replaces an existing skill (admins).
func (a *Artifacts) ReplaceSkill(ctx context.Context, p identity.Principal, slug string, in api.SkillInput) (events.Skill, error) {
	if err := admin(p, "change skills"); err != nil {
		return events.Skill{}, err
	}
	if err := sameSlug(in.Slug, slug); err != nil {
		return events.Skill{}, err
	}
	if _, err := a.Skill(ctx, p, slug); err != nil {
		return events.Skill{}, err
	}
	return a.putSkill(ctx, p, slug, in)
}

func (a *Artifacts) putSkill(ctx context.Context, p identity.Principal, slug string, in api.SkillInput) (events.Skill, error) {
	var s events.Skill
	err := a.call(ctx, events.OpSkillsPut, events.SkillPut{Caller: p.Caller(), Skill: events.Skill{
		Slug: slug, Name: in.Name, Description: in.Description, License: in.License, Compatibility: in.Compatibility,
		AllowedTools: in.AllowedTools, Metadata: in.Metadata, Triggers: in.Triggers, ArgumentHint: in.ArgumentHint,
		Uses: in.Uses, Body: in.Body,
	}, Document: in.Document, Enabled: in.Enabled}, &s)
	return s, err
}

// DeleteSkill deletes a skill (admins).
func (a *Artifacts) DeleteSkill(ctx context.Context, p identity.Principal, slug string) error {
	if err := admin(p, "delete skills"); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpSkillsDelete, events.ArtifactRef{Caller: p.Caller(), Slug: slug}, nil), "skill", slug)
}

// Available lists the skills p may invoke with /slug in project (which p
// must be able to use; "" for none) under profile ("" for the project's
// default). Like the expansion of /slug, it treats a profile the tenant
// does not have as none.
func (a *Artifacts) Available(ctx context.Context, p identity.Principal, project, profile string) ([]events.AvailableSkill, error) {
	if project != "" {
		if _, err := a.projects.Project(ctx, p, project); err != nil {
			return nil, err
		}
	}
	var out []events.AvailableSkill
	err := a.call(ctx, events.OpSkillsAvailable, events.SkillsAvailable{Caller: p.Caller(), ProjectID: project, ProfileID: profile}, &out)
	return out, err
}

// ImportCommands imports legacy commands as slash skills (admins).
func (a *Artifacts) ImportCommands(ctx context.Context, p identity.Principal, cmds []events.LegacyCommand) (events.CommandsImported, error) {
	var out events.CommandsImported
	if err := admin(p, "import commands"); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpCommandsImport, events.CommandsImport{Caller: p.Caller(), Commands: cmds}, &out)
	return out, err
}

// Subagents lists the tenant's subagents.
func (a *Artifacts) Subagents(ctx context.Context, p identity.Principal) ([]events.Subagent, error) {
	var out []events.Subagent
	err := a.call(ctx, events.OpSubagentsList, events.ListRequest{Caller: p.Caller()}, &out)
	return out, err
}

// Subagent returns one subagent.
func (a *Artifacts) Subagent(ctx context.Context, p identity.Principal, slug string) (events.Subagent, error) {
	var s events.Subagent
	err := a.call(ctx, events.OpSubagentsGet, events.ArtifactRef{Caller: p.Caller(), Slug: slug}, &s)
	return s, named(err, "subagent", slug)
}

// CreateSubagent creates a subagent (admins); a slug in use is a conflict.
func (a *Artifacts) CreateSubagent(ctx context.Context, p identity.Principal, in api.SubagentInput) (events.Subagent, error) {
	if err := admin(p, "create subagents"); err != nil {
		return events.Subagent{}, err
	}
	if in.Slug == "" {
		return events.Subagent{}, apierr.New(apierr.ErrInvalid, "slug: required")
	}
	_, err := a.Subagent(ctx, p, in.Slug)
	if err := mustCreate(err, "subagent", in.Slug); err != nil {
		return events.Subagent{}, err
	}
	return a.putSubagent(ctx, p, in.Slug, in)
}

// ReplaceSubagent replaces an existing subagent (admins).
func (a *Artifacts) ReplaceSubagent(ctx context.Context, p identity.Principal, slug string, in api.SubagentInput) (events.Subagent, error) {
	if err := admin(p, "change subagents"); err != nil {
		return events.Subagent{}, err
	}
	if err := sameSlug(in.Slug, slug); err != nil {
		return events.Subagent{}, err
	}
	if _, err := a.Subagent(ctx, p, slug); err != nil {
		return events.Subagent{}, err
	}
	return a.putSubagent(ctx, p, slug, in)
}

func (a *Artifacts) putSubagent(ctx context.Context, p identity.Principal, slug string, in api.SubagentInput) (events.Subagent, error) {
	var s events.Subagent
	err := a.call(ctx, events.OpSubagentsPut, events.SubagentPut{Caller: p.Caller(), Subagent: events.Subagent{
		Slug: slug, Name: in.Name, Description: in.Description, Body: in.Body, Model: in.Model, Tools: in.Tools,
		ModelByEngine: in.ModelByEngine, ToolsByEngine: in.ToolsByEngine,
	}, Enabled: in.Enabled}, &s)
	return s, err
}

// DeleteSubagent deletes a subagent (admins).
func (a *Artifacts) DeleteSubagent(ctx context.Context, p identity.Principal, slug string) error {
	if err := admin(p, "delete subagents"); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpSubagentsDelete, events.ArtifactRef{Caller: p.Caller(), Slug: slug}, nil), "subagent", slug)
}

// Detect lists an engine's skills or subagents, Clopen's and adoptable
// ones (admins: it reports paths on the server's disk).
func (a *Artifacts) Detect(ctx context.Context, p identity.Principal, typ string, engine events.EngineType) ([]events.DetectedArtifact, error) {
	if err := admin(p, "detect engine artifacts"); err != nil {
		return nil, err
	}
	var out []events.DetectedArtifact
	err := a.call(ctx, events.OpDetect, events.DetectRequest{Caller: p.Caller(), Type: typ, Engine: engine}, &out)
	return out, err
}

// Adopt links an entry detect found into the tenant's store (admins).
func (a *Artifacts) Adopt(ctx context.Context, p identity.Principal, in api.AdoptInput) (events.DetectedArtifact, error) {
	var out events.DetectedArtifact
	if err := admin(p, "adopt engine artifacts"); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpAdopt, events.AdoptRequest{Caller: p.Caller(), Type: in.Type, Engine: in.Engine, Path: in.Path, Slug: in.Slug}, &out)
	return out, err
}

// Revision returns the tenant's artifact revision, bumped by every change.
func (a *Artifacts) Revision(ctx context.Context, p identity.Principal) (events.RevisionReply, error) {
	var out events.RevisionReply
	err := a.call(ctx, events.OpRevision, events.ListRequest{Caller: p.Caller()}, &out)
	return out, err
}

// AuditPage returns a page of the artifacts service's part of p's tenant's
// audit log (skills, subagents, instructions, permissions, profiles,
// providers, accounts, source credentials).
func (a *Artifacts) AuditPage(ctx context.Context, p identity.Principal, q events.AuditQuery) ([]events.AuditEntry, error) {
	q.Caller = p.Caller()
	var out events.AuditPage
	err := a.call(ctx, events.OpAuditList, q, &out)
	return out.Entries, err
}
