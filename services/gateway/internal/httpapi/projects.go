package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

func (s *Server) listProjects(ctx context.Context, _ *http.Request, p identity.Principal, _ none) (api.Projects, error) {
	ps, err := s.store.ListProjects(ctx, p)
	return api.Projects{Projects: ps}, err
}

// createProject creates the project, then imports its git source if it
// has one; a source that cannot be imported takes the new project with it,
// so a failed create leaves nothing behind.
func (s *Server) createProject(ctx context.Context, _ *http.Request, p identity.Principal, in api.CreateProject) (api.Project, error) {
	if in.Source != nil && in.Source.Kind != api.SourceGit {
		return api.Project{}, apierr.New(apierr.ErrInvalid, "source.kind: want git (upload an archive with POST /v1/projects/{id}/archive)")
	}
	pr, err := s.store.CreateProject(ctx, p, in)
	if err != nil || in.Source == nil {
		return pr, err
	}
	got, err := s.importGit(ctx, p, pr, *in.Source)
	if err != nil {
		cleanup := context.WithoutCancel(ctx)
		if ferr := s.artifacts.ForgetProject(cleanup, p, pr.ID); ferr != nil {
			s.logger.WarnContext(ctx, "forget the project whose source failed", "project", pr.ID, "err", ferr)
		}
		if derr := s.store.DeleteProject(cleanup, p, pr.ID); derr != nil {
			s.logger.WarnContext(ctx, "delete the project whose source failed", "project", pr.ID, "err", derr)
		}
		return api.Project{}, err
	}
	return got, nil
}

func (s *Server) getProject(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Project, error) {
	return s.store.Project(ctx, p, r.PathValue("id"))
}

// updateProject sets a new default profile in artifacts first, where runs
// read it, so the gateway's copy never names a profile artifacts refused.
func (s *Server) updateProject(ctx context.Context, r *http.Request, p identity.Principal, in api.UpdateProject) (api.Project, error) {
	if in.DefaultProfileID != nil {
		trimmed := strings.TrimSpace(*in.DefaultProfileID)
		if _, err := s.artifacts.SetDefaultProfile(ctx, p, r.PathValue("id"), trimmed); err != nil {
			return api.Project{}, err
		}
		in.DefaultProfileID = &trimmed
	}
	return s.store.UpdateProject(ctx, p, r.PathValue("id"), in)
}

// deleteProject deletes the project's chat sessions in streammgr and its
// artifact rows first, so nothing outlives its project; if either service
// fails, the project stays and the deletion can be retried.
func (s *Server) deleteProject(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	id := r.PathValue("id")
	if _, err := s.store.ManagedProject(ctx, p, id); err != nil {
		return none{}, err
	}
	deleted := map[string]bool{}
	for {
		sessions, err := s.chats.ListSessions(ctx, p, id, "", 100)
		if err != nil {
			return none{}, err
		}
		if len(sessions) == 0 {
			break
		}
		for _, ss := range sessions {
			if deleted[ss.ID] {
				return none{}, apierr.New(apierr.ErrConflict, "session %s of project %s survived its deletion; try again", ss.ID, id)
			}
			if err := s.chats.DeleteSession(ctx, p, ss.ID); err != nil && !notFound(err) {
				return none{}, err // a session deleted meanwhile is what this wants
			}
			deleted[ss.ID] = true
		}
	}
	if err := s.artifacts.ForgetProject(ctx, p, id); err != nil {
		return none{}, err
	}
	return none{}, s.store.DeleteProject(ctx, p, id)
}

// notFound reports a not-found answer, the gateway's own or streammgr's.
func notFound(err error) bool {
	var apiErr *events.APIError
	return errors.Is(err, apierr.ErrNotFound) || errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound
}

func (s *Server) listMembers(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Members, error) {
	ms, err := s.store.ListMembers(ctx, p, r.PathValue("id"))
	return api.Members{Members: ms}, err
}

func (s *Server) addMember(ctx context.Context, r *http.Request, p identity.Principal, in api.AddMember) (api.Member, error) {
	return s.store.AddMember(ctx, p, r.PathValue("id"), in)
}

func (s *Server) removeMember(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.store.RemoveMember(ctx, p, r.PathValue("id"), r.PathValue("userId"))
}
