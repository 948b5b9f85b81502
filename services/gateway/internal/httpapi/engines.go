package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Query parameters of GET /v1/models.
var (
	modelsEngineParam   = Param{"engine", "string", "the engine whose catalog to list (required)"}
	modelsAccountParam  = Param{"account", "string", "the engine account whose view to list; empty: the active account"}
	modelsProviderParam = Param{"provider", "string", "only this provider's models"}
)

// engineRoutes are the engines, models and generator routes.
func (s *Server) engineRoutes(key func(tag, method, path, summary string, ep endpoint, query ...Param) Route) []Route {
	ok := http.StatusOK
	return []Route{
		key("engines", "GET", "/v1/engines", "Every engine, ready when a worker offers it, with the versions workers run", handle(s, ok, s.listEngines)),
		key("engines", "GET", "/v1/models", "An engine's model catalog as the caller's tenant and account see it; no worker: an empty list and a message",
			handle(s, ok, s.listModels), modelsEngineParam, modelsAccountParam, modelsProviderParam),
		key("generate", "POST", "/v1/projects/{id}/generate/commit-message", "A commit message for a session's changes: its workspace at HEAD against its base",
			handle(s, ok, s.generateCommitMessage)),
		key("generate", "POST", "/v1/projects/{id}/generate/branch-name", "A git branch name for a session's changes: its workspace at HEAD against its base",
			handle(s, ok, s.generateBranchName)),
		key("generate", "POST", "/v1/artifacts/{kind}/generate", "Draft a skill, subagent or instruction from its purpose; nothing is saved",
			handle(s, ok, s.generateDraft)),
	}
}

func (s *Server) listEngines(ctx context.Context, _ *http.Request, _ identity.Principal, _ none) (api.Engines, error) {
	list, err := s.engines.List(ctx)
	return api.Engines{Engines: list}, err
}

func (s *Server) listModels(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.ModelsReply, error) {
	q := r.URL.Query()
	return s.engines.Models(ctx, p, events.EngineType(q.Get("engine")), q.Get("account"), q.Get("provider"))
}

func (s *Server) generateCommitMessage(ctx context.Context, r *http.Request, p identity.Principal, in api.Generate) (api.CommitMessage, error) {
	var out api.CommitMessage
	g, err := s.generateFromChanges(ctx, r, p, in, events.GenerateCommitMessage, &out)
	out.Generated = g
	return out, err
}

func (s *Server) generateBranchName(ctx context.Context, r *http.Request, p identity.Principal, in api.Generate) (api.BranchName, error) {
	var out api.BranchName
	g, err := s.generateFromChanges(ctx, r, p, in, events.GenerateBranchName, &out)
	out.Generated = g
	return out, err
}

// generateFromChanges runs a generator of changes on one of the project's
// sessions and decodes its document into out. The worker reads the
// session's snapshots, which the gateway resolves here: the session must be
// one the caller may see, in the project of the path.
func (s *Server) generateFromChanges(ctx context.Context, r *http.Request, p identity.Principal, in api.Generate, generator string, out any) (api.Generated, error) {
	project := r.PathValue("id")
	if _, err := s.store.Project(ctx, p, project); err != nil {
		return api.Generated{}, err
	}
	if in.SessionID == "" {
		return api.Generated{}, apierr.New(apierr.ErrInvalid, "sessionId: missing; name the session whose changes to describe")
	}
	sess, err := s.chats.Session(ctx, p, in.SessionID)
	if err != nil {
		return api.Generated{}, err
	}
	if sess.ProjectID != project {
		return api.Generated{}, apierr.New(apierr.ErrNotFound, "session %s not found in project %s", in.SessionID, project)
	}
	rep, err := s.engines.Generate(ctx, p, events.GenerateRequest{Engine: in.Engine, Model: in.Model, Provider: in.Provider,
		AccountID: in.AccountID, ProjectID: project, Generator: generator, Input: in.Instructions,
		SessionID: sess.ID, From: sess.BaseSnapshot, To: sess.HeadSnapshot})
	if err != nil {
		return api.Generated{}, err
	}
	return generated(rep), json.Unmarshal(rep.Output, out)
}

// draftKinds are the artifact kinds a draft can be generated for.
var draftKinds = []string{events.ArtifactSkill, events.ArtifactSubagent, events.ArtifactInstruction}

func (s *Server) generateDraft(ctx context.Context, r *http.Request, p identity.Principal, in api.GenerateDraft) (api.Draft, error) {
	kind := r.PathValue("kind")
	if !slices.Contains(draftKinds, kind) {
		return api.Draft{}, apierr.New(apierr.ErrNotFound, "no drafts of %q: generate a skill, subagent or instruction", kind)
	}
	if strings.TrimSpace(in.Purpose) == "" {
		return api.Draft{}, apierr.New(apierr.ErrInvalid, "purpose: missing; say what the %s is for", kind)
	}
	rep, err := s.engines.Generate(ctx, p, events.GenerateRequest{Engine: in.Engine, Model: in.Model, Provider: in.Provider,
		AccountID: in.AccountID, Generator: kind, Input: in.Purpose})
	if err != nil {
		return api.Draft{}, err
	}
	d := api.Draft{Kind: kind, Generated: generated(rep)}
	if err := json.Unmarshal(rep.Output, &d); err != nil {
		return api.Draft{}, err
	}
	d.Kind = kind
	if kind != events.ArtifactInstruction {
		d.Slug = slugOf(d.Name)
	}
	return d, nil
}

func generated(rep events.GenerateReply) api.Generated {
	return api.Generated{Model: rep.Model, Provider: rep.Provider, AccountID: rep.AccountID}
}

// slugOf makes an artifact slug of a name: lower-case letters and digits
// in runs joined by single hyphens, at most 64 bytes; "draft" when nothing
// is left.
func slugOf(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
		default:
			dash = true
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 {
		return "draft"
	}
	return strings.TrimRight(b.String()[:min(b.Len(), 64)], "-")
}
