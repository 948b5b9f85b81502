package httpapi

import (
	"context"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/artifacts"
	"clopen.dev/services/gateway/internal/identity"
)

// The artifacts routes map one to one onto internal/artifacts, which does
// the access checks; path and query parameters fill the names, the body the
// rest.

func (s *Server) listSkills(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Skills, error) {
	ss, err := s.artifacts.Skills(ctx, p)
	return api.Skills{Skills: nonNil(ss)}, err
}

func (s *Server) getSkill(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Skill, error) {
	return s.artifacts.Skill(ctx, p, r.PathValue("slug"))
}

func (s *Server) createSkill(ctx context.Context, _ *http.Request, p identity.Principal, in api.SkillInput) (events.Skill, error) {
	return s.artifacts.CreateSkill(ctx, p, in)
}

func (s *Server) replaceSkill(ctx context.Context, r *http.Request, p identity.Principal, in api.SkillInput) (events.Skill, error) {
	return s.artifacts.ReplaceSkill(ctx, p, r.PathValue("slug"), in)
}

func (s *Server) deleteSkill(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.artifacts.DeleteSkill(ctx, p, r.PathValue("slug"))
}

func (s *Server) availableSkills(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.AvailableSkills, error) {
	q := r.URL.Query()
	ss, err := s.artifacts.Available(ctx, p, q.Get("projectId"), q.Get("profileId"))
	return api.AvailableSkills{Skills: nonNil(ss)}, err
}

func (s *Server) importCommands(ctx context.Context, _ *http.Request, p identity.Principal, in api.ImportCommands) (events.CommandsImported, error) {
	return s.artifacts.ImportCommands(ctx, p, in.Commands)
}

func (s *Server) listSubagents(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Subagents, error) {
	ss, err := s.artifacts.Subagents(ctx, p)
	return api.Subagents{Subagents: nonNil(ss)}, err
}

func (s *Server) getSubagent(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Subagent, error) {
	return s.artifacts.Subagent(ctx, p, r.PathValue("slug"))
}

func (s *Server) createSubagent(ctx context.Context, _ *http.Request, p identity.Principal, in api.SubagentInput) (events.Subagent, error) {
	return s.artifacts.CreateSubagent(ctx, p, in)
}

func (s *Server) replaceSubagent(ctx context.Context, r *http.Request, p identity.Principal, in api.SubagentInput) (events.Subagent, error) {
	return s.artifacts.ReplaceSubagent(ctx, p, r.PathValue("slug"), in)
}

func (s *Server) deleteSubagent(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.artifacts.DeleteSubagent(ctx, p, r.PathValue("slug"))
}

// layerOf reads which layer a route is about from its path.
type layerOf func(r *http.Request) artifacts.Layer

var (
	tenantLayer  layerOf = func(*http.Request) artifacts.Layer { return artifacts.Layer{} }
	projectLayer layerOf = func(r *http.Request) artifacts.Layer { return artifacts.Layer{ProjectID: r.PathValue("id")} }
	profileLayer layerOf = func(r *http.Request) artifacts.Layer { return artifacts.Layer{ProfileID: r.PathValue("id")} }
)

func (s *Server) getInstructions(l layerOf) func(context.Context, *http.Request, identity.Principal, none) (events.Instructions, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Instructions, error) {
		return s.artifacts.Instructions(ctx, p, l(r))
	}
}

func (s *Server) putInstructions(l layerOf) func(context.Context, *http.Request, identity.Principal, api.InstructionsInput) (events.Instructions, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, in api.InstructionsInput) (events.Instructions, error) {
		return s.artifacts.PutInstructions(ctx, p, l(r), in)
	}
}

func (s *Server) getPermissions(l layerOf) func(context.Context, *http.Request, identity.Principal, none) (events.PermissionSet, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.PermissionSet, error) {
		return s.artifacts.Permissions(ctx, p, l(r))
	}
}

func (s *Server) putPermissions(l layerOf) func(context.Context, *http.Request, identity.Principal, events.PermissionRules) (events.PermissionSet, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, in events.PermissionRules) (events.PermissionSet, error) {
		return s.artifacts.PutPermissions(ctx, p, l(r), in)
	}
}

func (s *Server) effectivePermissions(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.PermissionRules, error) {
	return s.artifacts.EffectivePermissions(ctx, p, r.PathValue("id"), r.URL.Query().Get("profileId"))
}

func (s *Server) listProfiles(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Profiles, error) {
	ps, err := s.artifacts.Profiles(ctx, p)
	return api.Profiles{Profiles: nonNil(ps)}, err
}

func (s *Server) getProfile(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Profile, error) {
	return s.artifacts.Profile(ctx, p, r.PathValue("id"))
}

func (s *Server) createProfile(ctx context.Context, _ *http.Request, p identity.Principal, in api.ProfileInput) (events.Profile, error) {
	return s.artifacts.PutProfile(ctx, p, "", in)
}

func (s *Server) replaceProfile(ctx context.Context, r *http.Request, p identity.Principal, in api.ProfileInput) (events.Profile, error) {
	return s.artifacts.PutProfile(ctx, p, r.PathValue("id"), in)
}

// deleteProfile also clears the gateway's copy of the project defaults that
// named the profile (artifacts drops its own with the profile).
func (s *Server) deleteProfile(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	id := r.PathValue("id")
	if err := s.artifacts.DeleteProfile(ctx, p, id); err != nil {
		return none{}, err
	}
	return none{}, s.store.ClearDefaultProfile(ctx, p.Actor(), p.TenantID, id)
}

func (s *Server) getDefaultProfile(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.DefaultProfile, error) {
	return s.artifacts.DefaultProfile(ctx, p, r.PathValue("id"))
}

func (s *Server) setDefaultProfile(ctx context.Context, r *http.Request, p identity.Principal, in api.SetDefaultProfile) (api.DefaultProfile, error) {
	id := r.PathValue("id")
	d, err := s.artifacts.SetDefaultProfile(ctx, p, id, in.ProfileID)
	if err != nil {
		return d, err
	}
	_, err = s.store.UpdateProject(ctx, p, id, api.UpdateProject{DefaultProfileID: &in.ProfileID})
	return d, err
}

func (s *Server) listProviders(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Providers, error) {
	ps, err := s.artifacts.Providers(ctx, p)
	return api.Providers{Providers: nonNil(ps)}, err
}

func (s *Server) createProvider(ctx context.Context, _ *http.Request, p identity.Principal, in api.ProviderInput) (events.Provider, error) {
	return s.artifacts.CreateProvider(ctx, p, in)
}

func (s *Server) replaceProvider(ctx context.Context, r *http.Request, p identity.Principal, in api.ProviderInput) (events.Provider, error) {
	return s.artifacts.ReplaceProvider(ctx, p, r.PathValue("id"), in)
}

func (s *Server) deleteProvider(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.artifacts.DeleteProvider(ctx, p, r.PathValue("id"))
}

func (s *Server) listAccounts(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Accounts, error) {
	as, err := s.artifacts.Accounts(ctx, p, r.PathValue("id"))
	return api.Accounts{Accounts: nonNil(as)}, err
}

func (s *Server) createAccount(ctx context.Context, r *http.Request, p identity.Principal, in api.AccountInput) (events.Account, error) {
	return s.artifacts.CreateAccount(ctx, p, r.PathValue("id"), in)
}

func (s *Server) replaceAccount(ctx context.Context, r *http.Request, p identity.Principal, in api.AccountInput) (events.Account, error) {
	return s.artifacts.ReplaceAccount(ctx, p, r.PathValue("id"), in)
}

func (s *Server) deleteAccount(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.artifacts.DeleteAccount(ctx, p, r.PathValue("id"))
}

func (s *Server) activateAccount(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.artifacts.ActivateAccount(ctx, p, r.PathValue("id"))
}

func (s *Server) detect(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.DetectedArtifacts, error) {
	q := r.URL.Query()
	as, err := s.artifacts.Detect(ctx, p, q.Get("type"), events.EngineType(q.Get("engine")))
	return api.DetectedArtifacts{Artifacts: nonNil(as)}, err
}

func (s *Server) adopt(ctx context.Context, _ *http.Request, p identity.Principal, in api.AdoptInput) (events.DetectedArtifact, error) {
	return s.artifacts.Adopt(ctx, p, in)
}

func (s *Server) revision(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (events.RevisionReply, error) {
	return s.artifacts.Revision(ctx, p)
}

func (s *Server) listMCPServers(l layerOf) func(context.Context, *http.Request, identity.Principal, none) (api.MCPServers, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.MCPServers, error) {
		ss, err := s.artifacts.MCPServers(ctx, p, l(r))
		return api.MCPServers{MCPServers: nonNil(ss)}, err
	}
}

func (s *Server) getMCPServer(l layerOf) func(context.Context, *http.Request, identity.Principal, none) (events.MCPServerDef, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.MCPServerDef, error) {
		return s.artifacts.MCPServer(ctx, p, l(r), r.PathValue("slug"))
	}
}

func (s *Server) createMCPServer(l layerOf) func(context.Context, *http.Request, identity.Principal, api.MCPServerInput) (events.MCPServerDef, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, in api.MCPServerInput) (events.MCPServerDef, error) {
		return s.artifacts.CreateMCPServer(ctx, p, l(r), in)
	}
}

func (s *Server) replaceMCPServer(l layerOf) func(context.Context, *http.Request, identity.Principal, api.MCPServerInput) (events.MCPServerDef, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, in api.MCPServerInput) (events.MCPServerDef, error) {
		return s.artifacts.ReplaceMCPServer(ctx, p, l(r), r.PathValue("slug"), in)
	}
}

func (s *Server) deleteMCPServer(l layerOf) func(context.Context, *http.Request, identity.Principal, none) (none, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
		return none{}, s.artifacts.DeleteMCPServer(ctx, p, l(r), r.PathValue("slug"))
	}
}

func (s *Server) probeMCPServer(l layerOf) func(context.Context, *http.Request, identity.Principal, none) (events.MCPServerStatus, error) {
	return func(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.MCPServerStatus, error) {
		return s.artifacts.ProbeMCPServer(ctx, p, l(r), r.PathValue("slug"))
	}
}
