package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// baseTree is the snapshot tree of a session's workspace (the engine
// worker's name for it), the one tree a project's base holds.
const baseTree = "workspace"

// maxConflictsNamed bounds the conflicting paths an apply's 409 lists.
const maxConflictsNamed = 50

// applySession makes the project's base the session's files: the changes
// from the base the session started from (B0) to its HEAD (S) are merged
// into the project's current base (P) and the result becomes the base, by
// a compare-and-set against P so that of two racing applies one wins and
// the other gets 409.
func (s *Server) applySession(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.AppliedSession, error) {
	id := r.PathValue("id")
	sess, err := s.chats.Session(ctx, p, id)
	if err != nil {
		return api.AppliedSession{}, err
	}
	pr, err := s.store.ManagedProject(ctx, p, sess.ProjectID)
	if err != nil {
		return api.AppliedSession{}, err
	}
	if sess.ActiveRunID != "" {
		return api.AppliedSession{}, apierr.New(apierr.ErrConflict,
			"session %s has a turn running (run %s): wait for the turn to end, then apply", id, sess.ActiveRunID)
	}
	snaps := &snapshot.Snapshots{Store: s.snapshots, Tenant: p.TenantID}
	base, err := loadSnapshot(ctx, snaps, sess.BaseSnapshot)
	if err != nil {
		return api.AppliedSession{}, err
	}
	head, err := loadSnapshot(ctx, snaps, sess.HeadSnapshot)
	if err != nil {
		return api.AppliedSession{}, err
	}
	current, err := loadSnapshot(ctx, snaps, pr.BaseSnapshot)
	if err != nil {
		return api.AppliedSession{}, err
	}
	merged, conflicts, err := snaps.Merge(ctx, base, head, current, baseTree)
	if err != nil {
		return api.AppliedSession{}, fmt.Errorf("apply session %s: %w", id, err)
	}
	if len(conflicts) > 0 {
		return api.AppliedSession{}, conflictError(id, conflicts)
	}
	out := api.AppliedSession{BaseSnapshot: pr.BaseSnapshot, Changes: []events.FileChange{}}
	if merged == current {
		return out, nil // nothing the base lacks
	}
	// The base keeps its commit: it stays the commit the base descends from.
	if err := s.store.SetBase(ctx, p.Actor(), p.TenantID, pr.ID, identity.BaseChange{Prev: pr.BaseSnapshot, Snapshot: merged.ID,
		Commit: pr.BaseCommit, Action: "project.apply"}); err != nil {
		return api.AppliedSession{}, err
	}
	out.BaseSnapshot = merged.ID
	changes := snapshot.Diff(current, merged, baseTree)
	if err := snaps.CountLines(ctx, current, merged, baseTree, changes); err != nil {
		s.logger.WarnContext(ctx, "count the lines an apply changed", "session", id, "err", err)
	}
	for _, c := range changes {
		out.Changes = append(out.Changes, events.FileChange{Path: c.Path, Kind: events.FileChangeKind(c.Kind),
			LinesAdded: c.Added, LinesRemoved: c.Removed, Binary: c.Binary})
	}
	return out, nil
}

// loadSnapshot loads manifest id of the tenant; "" is no files (nil).
func loadSnapshot(ctx context.Context, snaps *snapshot.Snapshots, id string) (*snapshot.Manifest, error) {
	if id == "" {
		return nil, nil
	}
	m, err := snaps.Load(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("apply: %w", err)
	}
	return m, nil
}

// conflictError is the 409 of an apply that conflicts, naming the paths.
func conflictError(session string, conflicts []snapshot.Conflict) error {
	var b strings.Builder
	for i, c := range conflicts {
		if i == maxConflictsNamed {
			fmt.Fprintf(&b, "; and %d more", len(conflicts)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (session: %s, project: %s)", c.Path, c.Ours, c.Theirs)
	}
	return apierr.New(apierr.ErrConflict, "session %s conflicts with the project's base, which changed the same files since the session "+
		"started; nothing was applied. %d conflicting path(s): %s", session, len(conflicts), b.String())
}
