package artifacts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/mcpoauth"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/artifacts/internal/seal"
	"clopen.dev/services/artifacts/internal/skills"
	"clopen.dev/services/artifacts/internal/store"
)

// api serves svc.artifacts.<op>. Each handler checks the caller's tenant
// first and passes it to the store, which filters every query by it.
type api struct {
	log      *slog.Logger
	st       *store.Store
	realHome string
	egress   egress.Policy
	// oauth signs in to remote MCP servers at the callback redirect; nil
	// without a public URL (newOAuth).
	oauth    *mcpoauth.Client
	redirect string
}

// dispatched are the operations that act for a run rather than for a
// person, with the token kinds they accept; every other operation takes
// only the gateway's caller tokens. A credential (accounts.resolve) and a
// run's content go only to the run's worker, with the dispatch token of the
// run (bound to its tenant, engine and account: resolveAccount and content
// check the binding). accounts.resolve also takes a caller token, which the
// worker forwards when it serves the gateway's catalog and generation
// requests for the caller's own accounts. expand is streammgr's, which
// signs a dispatch token for each prompt it expands (a queued prompt is
// expanded long after its caller's token expired).
var dispatched = map[string][]bustoken.Kind{
	events.OpAccountsResolve: {bustoken.Dispatch, bustoken.Caller},
	events.OpContent:         {bustoken.Dispatch},
	events.OpExpand:          {bustoken.Dispatch},
	// A run's MCP servers, secrets in clear, go to the bridge that serves
	// the run, with the run's dispatch token (resolveMCPServer checks the
	// project is the token's), or that probes one for the gateway, with
	// the caller's token it forwards. Only the bridge may publish it.
	events.OpMCPServersResolve: {bustoken.Dispatch, bustoken.Caller},
}

// endpoints registers every operation, served by srv; the op list is the
// whole API.
func (a *api) endpoints(s micro.Service, srv *svc.Server) error {
	onInternal := func(err error) { a.log.Error("artifacts request", "err", err) }
	ops := map[string]svc.Endpoint{
		events.OpSkillsList:      svc.Handler(onInternal, guard(a.listSkills)),
		events.OpSkillsGet:       svc.Handler(onInternal, guard(a.getSkill)),
		events.OpSkillsPut:       svc.Handler(onInternal, guard(a.putSkill)),
		events.OpSkillsDelete:    svc.Handler(onInternal, guard(a.deleteSkill)),
		events.OpSkillsAvailable: svc.Handler(onInternal, guard(a.available)),
		events.OpCommandsImport:  svc.Handler(onInternal, guard(a.importCommands)),

		events.OpSubagentsList:   svc.Handler(onInternal, guard(a.listSubagents)),
		events.OpSubagentsGet:    svc.Handler(onInternal, guard(a.getSubagent)),
		events.OpSubagentsPut:    svc.Handler(onInternal, guard(a.putSubagent)),
		events.OpSubagentsDelete: svc.Handler(onInternal, guard(a.deleteSubagent)),

		events.OpInstructionsGet: svc.Handler(onInternal, guard(a.getInstructions)),
		events.OpInstructionsPut: svc.Handler(onInternal, guard(a.putInstructions)),

		events.OpPermissionsGet:     svc.Handler(onInternal, guard(a.getPermissions)),
		events.OpPermissionsPut:     svc.Handler(onInternal, guard(a.putPermissions)),
		events.OpPermissionsResolve: svc.Handler(onInternal, guard(a.resolvePermissions)),

		events.OpProfilesList:      svc.Handler(onInternal, guard(a.listProfiles)),
		events.OpProfilesGet:       svc.Handler(onInternal, guard(a.getProfile)),
		events.OpProfilesPut:       svc.Handler(onInternal, guard(a.putProfile)),
		events.OpProfilesDelete:    svc.Handler(onInternal, guard(a.deleteProfile)),
		events.OpProfileDefaultGet: svc.Handler(onInternal, guard(a.getDefault)),
		events.OpProfileDefaultSet: svc.Handler(onInternal, guard(a.setDefault)),
		events.OpProjectForget:     svc.Handler(onInternal, guard(a.forgetProject)),

		events.OpProvidersList:    svc.Handler(onInternal, guard(a.listProviders)),
		events.OpProvidersPut:     svc.Handler(onInternal, guard(a.putProvider)),
		events.OpProvidersDelete:  svc.Handler(onInternal, guard(a.deleteProvider)),
		events.OpAccountsList:     svc.Handler(onInternal, guard(a.listAccounts)),
		events.OpAccountsPut:      svc.Handler(onInternal, guard(a.putAccount)),
		events.OpAccountsDelete:   svc.Handler(onInternal, guard(a.deleteAccount)),
		events.OpAccountsActivate: svc.Handler(onInternal, guard(a.activateAccount)),
		events.OpAccountsResolve:  svc.Handler(onInternal, guard(a.resolveAccount)),

		events.OpSourceCredentialPut:     svc.Handler(onInternal, guard(a.putSourceCredential)),
		events.OpSourceCredentialDelete:  svc.Handler(onInternal, guard(a.deleteSourceCredential)),
		events.OpSourceCredentialResolve: svc.Handler(onInternal, guard(a.resolveSourceCredential)),

		events.OpMCPServersList:    svc.Handler(onInternal, guard(a.listMCPServers)),
		events.OpMCPServersGet:     svc.Handler(onInternal, guard(a.getMCPServer)),
		events.OpMCPServersPut:     svc.Handler(onInternal, guard(a.putMCPServer)),
		events.OpMCPServersDelete:  svc.Handler(onInternal, guard(a.deleteMCPServer)),
		events.OpMCPServersResolve: svc.Handler(onInternal, guard(a.resolveMCPServer)),
		events.OpMCPOAuthStart:     svc.Handler(onInternal, guard(a.startMCPOAuth)),
		events.OpMCPOAuthComplete:  svc.Handler(onInternal, guard(a.completeMCPOAuth)),

		events.OpIntegrationProviders: svc.Handler(onInternal, guard(a.integrationProviders)),
		events.OpIntegrationsList:     svc.Handler(onInternal, guard(a.listIntegrations)),
		events.OpIntegrationsGet:      svc.Handler(onInternal, guard(a.getIntegration)),
		events.OpIntegrationsPut:      svc.Handler(onInternal, guard(a.putIntegration)),
		events.OpIntegrationsDelete:   svc.Handler(onInternal, guard(a.deleteIntegration)),
		events.OpIntegrationsStatus:   svc.Handler(onInternal, guard(a.setIntegrationStatus)),

		events.OpContent:  svc.Handler(onInternal, guard(a.content)),
		events.OpExpand:   svc.Handler(onInternal, guard(a.expand)),
		events.OpDetect:   svc.Handler(onInternal, guard(a.detect)),
		events.OpAdopt:    svc.Handler(onInternal, guard(a.adopt)),
		events.OpRevision: svc.Handler(onInternal, guard(a.revision)),

		events.OpAuditList: svc.Handler(onInternal, store.Audit.Serve(a.st.DB)),
	}
	for op, h := range ops {
		subject, err := events.ServiceSubject(events.ArtifactsService, op)
		if err != nil {
			return err
		}
		if err := s.AddEndpoint(strings.ReplaceAll(op, ".", "_"), srv.Bind(h, dispatched[op]...), micro.WithEndpointSubject(subject)); err != nil {
			return fmt.Errorf("endpoint %s: %w", op, err)
		}
	}
	return nil
}

// guard checks the caller's tenant id (the verified token's: svc.Handler
// put it in the request) before the handler runs and maps the handler's
// error to an API error: the one place errors are classified.
func guard[Req any, Resp any](f func(ctx context.Context, tenant string, req Req) (Resp, error)) func(context.Context, Req) (Resp, error) {
	return func(ctx context.Context, req Req) (Resp, error) {
		var zero Resp
		var tenant string
		if c, ok := any(req).(interface{ Who() events.Caller }); ok {
			tenant = c.Who().TenantID
		}
		if _, err := uuid.Parse(tenant); err != nil {
			return zero, svc.Invalid("tenantId: want a UUID")
		}
		resp, err := f(ctx, tenant, req)
		if err != nil {
			return zero, apiErr(err)
		}
		return resp, nil
	}
}

func apiErr(err error) error {
	var ae *events.APIError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrNotFound):
		return svc.NotFound("%s", strings.TrimPrefix(err.Error(), "not found: "))
	case errors.Is(err, store.ErrInvalid), errors.Is(err, skills.ErrInvalid):
		return svc.Invalid("%s", err.Error())
	case errors.Is(err, store.ErrConflict):
		return svc.Conflict("%s", err.Error())
	case errors.Is(err, seal.ErrUnknownKey):
		// Mid-rotation on a replica not yet given the new key: it
		// answers once it has it, and nothing is sealed meanwhile.
		return svc.Unavailable("%s", err.Error())
	}
	if ae, ok := oauthErr(err); ok {
		return ae
	}
	return err
}

// Empty is the reply of operations that return nothing but the revision.
type Empty struct {
	Revision int64 `json:"revision"`
}

func (a *api) listSkills(ctx context.Context, t string, _ events.ListRequest) ([]events.Skill, error) {
	return a.st.ListSkills(ctx, t)
}

func (a *api) getSkill(ctx context.Context, t string, r events.ArtifactRef) (events.Skill, error) {
	return a.st.GetSkill(ctx, t, r.Slug)
}

func (a *api) putSkill(ctx context.Context, t string, r events.SkillPut) (events.Skill, error) {
	s, _, err := a.st.PutSkill(ctx, t, r)
	return s, err
}

func (a *api) deleteSkill(ctx context.Context, t string, r events.ArtifactRef) (Empty, error) {
	rev, err := a.st.DeleteSkill(ctx, t, r.Slug)
	return Empty{rev}, err
}

func (a *api) importCommands(ctx context.Context, t string, r events.CommandsImport) (events.CommandsImported, error) {
	out, _, err := a.st.ImportCommands(ctx, t, r.Commands)
	for _, w := range out.Warnings {
		a.log.WarnContext(ctx, "import command", "tenant", t, "warning", w)
	}
	return out, err
}

func (a *api) listSubagents(ctx context.Context, t string, _ events.ListRequest) ([]events.Subagent, error) {
	return a.st.ListSubagents(ctx, t)
}

func (a *api) getSubagent(ctx context.Context, t string, r events.ArtifactRef) (events.Subagent, error) {
	return a.st.GetSubagent(ctx, t, r.Slug)
}

func (a *api) putSubagent(ctx context.Context, t string, r events.SubagentPut) (events.Subagent, error) {
	s, _, err := a.st.PutSubagent(ctx, t, r)
	return s, err
}

func (a *api) deleteSubagent(ctx context.Context, t string, r events.ArtifactRef) (Empty, error) {
	rev, err := a.st.DeleteSubagent(ctx, t, r.Slug)
	return Empty{rev}, err
}

func (a *api) getInstructions(ctx context.Context, t string, r events.InstructionsRef) (events.Instructions, error) {
	return a.st.GetInstructions(ctx, t, r.Scope, r.ProjectID)
}

func (a *api) putInstructions(ctx context.Context, t string, r events.InstructionsPut) (Empty, error) {
	rev, err := a.st.PutInstructions(ctx, t, r.Instructions)
	return Empty{rev}, err
}

func (a *api) getPermissions(ctx context.Context, t string, r events.PermissionsRef) (events.PermissionSet, error) {
	return a.st.GetPermissions(ctx, t, r.Scope, r.ProjectID, r.ProfileID)
}

func (a *api) putPermissions(ctx context.Context, t string, r events.PermissionsPut) (events.PermissionSet, error) {
	s, _, err := a.st.PutPermissions(ctx, t, r.Set)
	return s, err
}

func (a *api) resolvePermissions(ctx context.Context, t string, r events.PermissionsResolve) (events.PermissionRules, error) {
	p, err := a.st.EffectiveProfile(ctx, t, r.ProjectID, r.ProfileID)
	if err != nil {
		return events.PermissionRules{}, err
	}
	return a.st.ResolvePermissions(ctx, t, r.ProjectID, profileID(p))
}

func (a *api) listProfiles(ctx context.Context, t string, _ events.ListRequest) ([]events.Profile, error) {
	return a.st.ListProfiles(ctx, t)
}

func (a *api) getProfile(ctx context.Context, t string, r events.ProfileRef) (events.Profile, error) {
	return a.st.GetProfile(ctx, t, r.ID)
}

func (a *api) putProfile(ctx context.Context, t string, r events.ProfilePut) (events.Profile, error) {
	p, _, err := a.st.PutProfile(ctx, t, r.Profile)
	return p, err
}

func (a *api) deleteProfile(ctx context.Context, t string, r events.ProfileRef) (Empty, error) {
	rev, err := a.st.DeleteProfile(ctx, t, r.ID)
	return Empty{rev}, err
}

func (a *api) getDefault(ctx context.Context, t string, r events.ProjectDefault) (events.ProjectDefault, error) {
	id, err := a.st.ProjectDefault(ctx, t, r.ProjectID)
	return events.ProjectDefault{ProjectID: r.ProjectID, ProfileID: id}, err
}

func (a *api) setDefault(ctx context.Context, t string, r events.ProjectDefault) (Empty, error) {
	rev, err := a.st.SetProjectDefault(ctx, t, r.ProjectID, r.ProfileID)
	return Empty{rev}, err
}

func (a *api) forgetProject(ctx context.Context, t string, r events.ProjectRef) (Empty, error) {
	rev, err := a.st.ForgetProject(ctx, t, r.ProjectID)
	return Empty{rev}, err
}

func (a *api) listProviders(ctx context.Context, t string, _ events.ListRequest) ([]events.Provider, error) {
	return a.st.ListProviders(ctx, t)
}

func (a *api) putProvider(ctx context.Context, t string, r events.ProviderPut) (events.Provider, error) {
	if err := a.egress.CheckURL(ctx, r.Provider.APIURL); err != nil {
		return events.Provider{}, svc.Invalid("%v", err)
	}
	p, _, err := a.st.PutProvider(ctx, t, r.Provider)
	return p, err
}

func (a *api) deleteProvider(ctx context.Context, t string, r events.RefByID) (Empty, error) {
	rev, err := a.st.DeleteProvider(ctx, t, r.ID)
	return Empty{rev}, err
}

func (a *api) listAccounts(ctx context.Context, t string, r events.ProviderAccounts) ([]events.Account, error) {
	return a.st.ListAccounts(ctx, t, r.ProviderID)
}

func (a *api) putAccount(ctx context.Context, t string, r events.AccountPut) (events.Account, error) {
	acc, _, err := a.st.PutAccount(ctx, t, r.Account, r.Credential)
	return acc, err
}

func (a *api) deleteAccount(ctx context.Context, t string, r events.RefByID) (Empty, error) {
	rev, err := a.st.DeleteAccount(ctx, t, r.ID)
	return Empty{rev}, err
}

func (a *api) activateAccount(ctx context.Context, t string, r events.RefByID) (Empty, error) {
	rev, err := a.st.ActivateAccount(ctx, t, r.ID)
	return Empty{rev}, err
}

func (a *api) putSourceCredential(ctx context.Context, t string, r events.SourceCredentialPut) (Empty, error) {
	return Empty{}, a.st.PutSourceCredential(ctx, t, r.ProjectID, r.Credential)
}

func (a *api) deleteSourceCredential(ctx context.Context, t string, r events.ProjectRef) (Empty, error) {
	return Empty{}, a.st.DeleteSourceCredential(ctx, t, r.ProjectID)
}

// resolveSourceCredential answers the worker that clones or pushes for the
// caller (with the caller's token, forwarded); the gateway may not publish
// this subject (busauth).
func (a *api) resolveSourceCredential(ctx context.Context, t string, r events.ProjectRef) (events.SourceCredential, error) {
	c, err := a.st.ResolveSourceCredential(ctx, t, r.ProjectID)
	return events.SourceCredential{Credential: c}, err
}

func (a *api) resolveAccount(ctx context.Context, t string, r events.AccountResolve) (events.ResolvedAccount, error) {
	if c, _ := svc.ClaimsFrom(ctx); c.Kind == bustoken.Dispatch && (string(r.Engine) != c.Engine || r.AccountID != c.AccountID) {
		return events.ResolvedAccount{}, svc.Unauthorized("run %s may resolve its own %s account %q, not %s account %q",
			c.RunID, c.Engine, c.AccountID, r.Engine, r.AccountID)
	}
	return a.st.ResolveAccount(ctx, t, r.Engine, r.AccountID)
}

func (a *api) revision(ctx context.Context, t string, _ events.ListRequest) (events.RevisionReply, error) {
	rev, err := a.st.Revision(ctx, t)
	return events.RevisionReply{Revision: rev}, err
}

func (a *api) listMCPServers(ctx context.Context, t string, r events.MCPServersList) ([]events.MCPServerDef, error) {
	return a.st.ListMCPServers(ctx, t, r.ProjectID)
}

func (a *api) getMCPServer(ctx context.Context, t string, r events.MCPServerRef) (events.MCPServerDef, error) {
	return a.st.GetMCPServer(ctx, t, r.ProjectID, r.Slug)
}

// putMCPServer checks a remote server's URL as a provider's is checked
// before the store validates and seals the rest.
func (a *api) putMCPServer(ctx context.Context, t string, r events.MCPServerPut) (events.MCPServerDef, error) {
	if err := a.egress.CheckField(ctx, "server.url", r.Server.URL); err != nil {
		return events.MCPServerDef{}, svc.Invalid("%v", err)
	}
	d, _, err := a.st.PutMCPServer(ctx, t, r.Server, r.Env, r.Headers)
	return d, err
}

func (a *api) deleteMCPServer(ctx context.Context, t string, r events.MCPServerRef) (Empty, error) {
	rev, err := a.st.DeleteMCPServer(ctx, t, r.ProjectID, r.Slug)
	return Empty{rev}, err
}

// resolveMCPServer answers the bridge: the project's server of the slug,
// else the tenant's, with its secrets in clear. A dispatch token binds the
// project; a caller token (a probe the gateway asked for, after checking
// the caller may change the server) is bound to its tenant alone.
func (a *api) resolveMCPServer(ctx context.Context, t string, r events.MCPServerRef) (events.ResolvedMCPServer, error) {
	if c, _ := svc.ClaimsFrom(ctx); c.Kind == bustoken.Dispatch && c.ProjectID != r.ProjectID {
		return events.ResolvedMCPServer{}, svc.Unauthorized("run %s of project %q may resolve its own project's MCP servers, not project %q's",
			c.RunID, c.ProjectID, r.ProjectID)
	}
	return a.st.ResolveMCPServer(ctx, t, r.ProjectID, r.Slug, a.refresher())
}
