package artifacts

import (
	"context"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/identity"
)

// Layer names where instructions or a permission set live: the tenant
// (both empty), a project, or (permissions only) a profile.
type Layer struct {
	ProjectID string
	ProfileID string
}

func (l Layer) scope() string {
	switch {
	case l.ProjectID != "":
		return events.ScopeProject
	case l.ProfileID != "":
		return events.ScopeProfile
	}
	return events.ScopeGlobal
}

// canRead checks p may read layer l: any user for the tenant's, a project
// p may use, a profile of the tenant.
func (a *Artifacts) canRead(ctx context.Context, p identity.Principal, l Layer) error {
	switch l.scope() {
	case events.ScopeProject:
		_, err := a.projects.Project(ctx, p, l.ProjectID)
		return err
	case events.ScopeProfile:
		// The service stores a layer for any profile id; the profile must be
		// the tenant's for its layer to be.
		_, err := a.Profile(ctx, p, l.ProfileID)
		return err
	}
	return nil
}

// canWrite checks p may change layer l: admins the tenant's and a profile's,
// a project's owners and admins a project's.
func (a *Artifacts) canWrite(ctx context.Context, p identity.Principal, l Layer, what string) error {
	if l.scope() == events.ScopeProject {
		_, err := a.projects.ManagedProject(ctx, p, l.ProjectID)
		return err
	}
	if err := admin(p, "change "+l.scope()+" "+what); err != nil {
		return err
	}
	return a.canRead(ctx, p, l)
}

// Instructions returns the instructions of the tenant or of a project
// (empty content when none are saved).
func (a *Artifacts) Instructions(ctx context.Context, p identity.Principal, l Layer) (events.Instructions, error) {
	var out events.Instructions
	if err := a.canRead(ctx, p, l); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpInstructionsGet, events.InstructionsRef{Caller: p.Caller(), Scope: l.scope(), ProjectID: l.ProjectID}, &out)
	return out, err
}

// PutInstructions saves the instructions of the tenant (admins) or of a
// project (its owners, admins) and returns them as saved.
func (a *Artifacts) PutInstructions(ctx context.Context, p identity.Principal, l Layer, in api.InstructionsInput) (events.Instructions, error) {
	if err := a.canWrite(ctx, p, l, "instructions"); err != nil {
		return events.Instructions{}, err
	}
	enabled := true
	if in.Enabled != nil {
		enabled = *in.Enabled
	} else if cur, err := a.Instructions(ctx, p, l); err != nil {
		return events.Instructions{}, err
	} else if cur.Content != "" {
		enabled = cur.Enabled
	}
	err := a.call(ctx, events.OpInstructionsPut, events.InstructionsPut{Caller: p.Caller(), Instructions: events.Instructions{
		Scope: l.scope(), ProjectID: l.ProjectID, Content: in.Content, Enabled: enabled}}, nil)
	if err != nil {
		return events.Instructions{}, err
	}
	return a.Instructions(ctx, p, l)
}

// Permissions returns the rules of one layer (empty lists when none).
func (a *Artifacts) Permissions(ctx context.Context, p identity.Principal, l Layer) (events.PermissionSet, error) {
	var out events.PermissionSet
	if err := a.canRead(ctx, p, l); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpPermissionsGet, events.PermissionsRef{Caller: p.Caller(), Scope: l.scope(),
		ProjectID: l.ProjectID, ProfileID: l.ProfileID}, &out)
	return out, err
}

// PutPermissions saves one layer (empty allow and deny delete it): the
// tenant's and a profile's for admins, a project's for its owners and
// admins.
func (a *Artifacts) PutPermissions(ctx context.Context, p identity.Principal, l Layer, rules events.PermissionRules) (events.PermissionSet, error) {
	var out events.PermissionSet
	if err := a.canWrite(ctx, p, l, "permissions"); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpPermissionsPut, events.PermissionsPut{Caller: p.Caller(), Set: events.PermissionSet{
		Scope: l.scope(), ProjectID: l.ProjectID, ProfileID: l.ProfileID, PermissionRules: rules}}, &out)
	return out, err
}

// EffectivePermissions merges the layers a run in project under profile
// gets: global, then the project's, then the profile's (profile "" means
// the project's default).
func (a *Artifacts) EffectivePermissions(ctx context.Context, p identity.Principal, project, profile string) (events.PermissionRules, error) {
	var out events.PermissionRules
	if _, err := a.projects.Project(ctx, p, project); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpPermissionsResolve, events.PermissionsResolve{Caller: p.Caller(), ProjectID: project, ProfileID: profile}, &out)
	return out, named(err, "profile", profile)
}

// Profiles lists the tenant's profiles with their items.
func (a *Artifacts) Profiles(ctx context.Context, p identity.Principal) ([]events.Profile, error) {
	var out []events.Profile
	err := a.call(ctx, events.OpProfilesList, events.ListRequest{Caller: p.Caller()}, &out)
	return out, err
}

// Profile returns one profile.
func (a *Artifacts) Profile(ctx context.Context, p identity.Principal, id string) (events.Profile, error) {
	var out events.Profile
	err := a.call(ctx, events.OpProfilesGet, events.ProfileRef{Caller: p.Caller(), ID: id}, &out)
	return out, named(err, "profile", id)
}

// PutProfile creates (id "") or replaces a profile and its items (admins).
func (a *Artifacts) PutProfile(ctx context.Context, p identity.Principal, id string, in api.ProfileInput) (events.Profile, error) {
	var out events.Profile
	if err := admin(p, "change profiles"); err != nil {
		return out, err
	}
	err := a.call(ctx, events.OpProfilesPut, events.ProfilePut{Caller: p.Caller(), Profile: events.Profile{
		ID: id, Slug: in.Slug, Name: in.Name, Description: in.Description, Items: in.Items}}, &out)
	return out, named(err, "profile", id)
}

// DeleteProfile deletes a profile with its permission layer; projects that
// had it as their default have none (admins).
func (a *Artifacts) DeleteProfile(ctx context.Context, p identity.Principal, id string) error {
	if err := admin(p, "delete profiles"); err != nil {
		return err
	}
	return named(a.call(ctx, events.OpProfilesDelete, events.ProfileRef{Caller: p.Caller(), ID: id}, nil), "profile", id)
}

// DefaultProfile returns the default profile of a project p may use.
func (a *Artifacts) DefaultProfile(ctx context.Context, p identity.Principal, project string) (api.DefaultProfile, error) {
	if _, err := a.projects.Project(ctx, p, project); err != nil {
		return api.DefaultProfile{}, err
	}
	var out events.ProjectDefault
	err := a.call(ctx, events.OpProfileDefaultGet, events.ProjectDefault{Caller: p.Caller(), ProjectID: project}, &out)
	return api.DefaultProfile{ProjectID: project, ProfileID: out.ProfileID}, err
}

// SetDefaultProfile sets (profile "" clears) a project's default profile:
// its owners and admins may.
func (a *Artifacts) SetDefaultProfile(ctx context.Context, p identity.Principal, project, profile string) (api.DefaultProfile, error) {
	if _, err := a.projects.ManagedProject(ctx, p, project); err != nil {
		return api.DefaultProfile{}, err
	}
	err := a.call(ctx, events.OpProfileDefaultSet, events.ProjectDefault{Caller: p.Caller(), ProjectID: project, ProfileID: profile}, nil)
	if err != nil {
		return api.DefaultProfile{}, named(err, "profile", profile)
	}
	return api.DefaultProfile{ProjectID: project, ProfileID: profile}, nil
}

// ForgetProject deletes the project's own artifact rows (instructions,
// permissions, default profile) when the project is deleted. The caller has
// checked that p manages the project.
func (a *Artifacts) ForgetProject(ctx context.Context, p identity.Principal, project string) error {
	return a.call(ctx, events.OpProjectForget, events.ProjectRef{Caller: p.Caller(), ProjectID: project}, nil)
}

// PutSourceCredential seals credential as project's repository credential;
// an empty one removes it. The caller has checked p may change project.
func (a *Artifacts) PutSourceCredential(ctx context.Context, p identity.Principal, project, credential string) error {
	if credential == "" {
		return a.call(ctx, events.OpSourceCredentialDelete, events.ProjectRef{Caller: p.Caller(), ProjectID: project}, nil)
	}
	return a.call(ctx, events.OpSourceCredentialPut, events.SourceCredentialPut{Caller: p.Caller(), ProjectID: project, Credential: credential}, nil)
}
