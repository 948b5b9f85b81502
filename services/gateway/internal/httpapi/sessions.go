package httpapi

import (
	"context"
	"encoding/json"
	"net/http"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/chats"
	"clopen.dev/services/gateway/internal/identity"
)

// defaultPage is the page size of the paged lists when none is asked for.
const defaultPage = 100

func (s *Server) listSessions(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Sessions, error) {
	n, err := limit(r, 0)
	if err != nil {
		return api.Sessions{}, err
	}
	ss, err := s.chats.ListSessions(ctx, p, r.PathValue("id"), r.URL.Query().Get("q"), n)
	return api.Sessions{Sessions: nonNil(ss)}, err
}

func (s *Server) createSession(ctx context.Context, r *http.Request, p identity.Principal, in api.CreateSession) (events.Session, error) {
	return s.chats.CreateSession(ctx, p, r.PathValue("id"), in)
}

func (s *Server) checkpoints(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Checkpoints, error) {
	cps, err := s.chats.Checkpoints(ctx, p, r.PathValue("id"))
	return api.Checkpoints{Checkpoints: nonNil(cps)}, err
}

func (s *Server) restore(ctx context.Context, r *http.Request, p identity.Principal, in api.Restore) (events.Session, error) {
	return s.chats.Restore(ctx, p, r.PathValue("id"), in.MessageID)
}

func (s *Server) getSession(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Session, error) {
	return s.chats.Session(ctx, p, r.PathValue("id"))
}

func (s *Server) updateSession(ctx context.Context, r *http.Request, p identity.Principal, in api.UpdateSession) (events.Session, error) {
	return s.chats.UpdateSession(ctx, p, r.PathValue("id"), in)
}

func (s *Server) deleteSession(ctx context.Context, r *http.Request, p identity.Principal, _ none) (none, error) {
	return none{}, s.chats.DeleteSession(ctx, p, r.PathValue("id"))
}

func (s *Server) listMessages(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Messages, error) {
	n, err := limit(r, defaultPage)
	if err != nil {
		return api.Messages{}, err
	}
	rows, err := s.chats.Messages(ctx, p, r.PathValue("id"), r.URL.Query().Get("afterRowId"), n)
	out := api.Messages{Messages: nonNil(rows)}
	if len(rows) == n {
		out.NextAfterRowID = rows[n-1].RowID
	}
	return out, err
}

func (s *Server) sendMessage(ctx context.Context, r *http.Request, p identity.Principal, in api.SendMessage) (events.StartTurnReply, error) {
	t, err := chats.NewTurn(r.PathValue("id"), in, s.cfg.MaxPromptBytes)
	if err != nil {
		return events.StartTurnReply{}, err
	}
	return s.chats.Send(ctx, p, t)
}

func (s *Server) listRuns(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Runs, error) {
	n, err := limit(r, 0)
	if err != nil {
		return api.Runs{}, err
	}
	runs, err := s.chats.Runs(ctx, p, r.PathValue("id"), n)
	return api.Runs{Runs: nonNil(runs)}, err
}

func (s *Server) snapshot(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Snapshot, error) {
	return s.chats.Snapshot(ctx, p, r.PathValue("id"))
}

func (s *Server) cancel(ctx context.Context, r *http.Request, p identity.Principal, in api.RunControl) (json.RawMessage, error) {
	return s.chats.Cancel(ctx, p, r.PathValue("id"), in.RunID)
}

func (s *Server) interrupt(ctx context.Context, r *http.Request, p identity.Principal, in api.RunControl) (json.RawMessage, error) {
	return s.chats.Interrupt(ctx, p, r.PathValue("id"), in.RunID)
}

func (s *Server) answer(ctx context.Context, r *http.Request, p identity.Principal, in api.Answer) (json.RawMessage, error) {
	return s.chats.Answer(ctx, p, r.PathValue("id"), in)
}

func (s *Server) getRun(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.Run, error) {
	return s.chats.Run(ctx, p, r.PathValue("id"))
}

func (s *Server) retryRun(ctx context.Context, r *http.Request, p identity.Principal, _ none) (events.StartTurnReply, error) {
	return s.chats.Retry(ctx, p, r.PathValue("id"))
}

func (s *Server) runEvents(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.RunEvents, error) {
	n, err := limit(r, defaultPage)
	if err != nil {
		return api.RunEvents{}, err
	}
	epoch, err := uintParam(r, "afterEpoch")
	if err != nil {
		return api.RunEvents{}, err
	}
	seq, err := uintParam(r, "afterSeq")
	if err != nil {
		return api.RunEvents{}, err
	}
	evs, err := s.chats.RunEvents(ctx, p, r.PathValue("id"), epoch, seq, n)
	return api.RunEvents{Events: nonNil(evs)}, err
}

// nonNil makes an empty list encode as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
