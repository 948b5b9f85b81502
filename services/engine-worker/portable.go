package worker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/engine-worker/internal/engine"
)

// Portable runs: a chat's files and its engine's session follow it to any
// worker. Each chat session works in a workspace of its own,
// <Workspaces>/<tenant>/<project>/sessions/<session>. When a turn ends the
// worker captures that workspace and the engine's native session files
// (engine.Sessions names them) into the snapshot store, and reports the
// snapshot on the run's terminal event; streammgr hands the snapshot of
// the newest turn on the session's HEAD to the next turn's job
// (events.Job.Snapshot). A worker whose copy of the session is not that
// snapshot restores it before the engine starts.

// workspaceTree is the snapshot tree of the session's workspace; the
// engine's session dirs are "state/<name>".
const workspaceTree = snapshot.WorkspaceTree

// statePrefix prefixes the trees of an engine's session dirs.
const statePrefix = "state/"

// captureTimeout bounds a turn's capture and restore.
const captureTimeout = 5 * time.Minute

// markerSuffix names the file beside a session's workspace that holds the
// id of the snapshot the workspace is a copy of.
const markerSuffix = ".snapshot"

// sessionWorkspace returns the chat session's working directory, creating
// it.
func (w *Worker) sessionWorkspace(job events.Job) (string, error) {
	dir := filepath.Join(w.cfg.Workspaces, job.Tenant, job.ProjectID, "sessions", job.SessionID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("workspace: %w", err)
	}
	return dir, nil
}

// manifestMemo is how many manifest entries a worker keeps in memory
// (about 200 bytes each): ten 20,000-file workspaces.
const manifestMemo = 200_000

// snapshots is the tenant's view of the snapshot store.
func (w *Worker) snapshots(tenant string) *snapshot.Snapshots {
	return &snapshot.Snapshots{Store: w.snapStore, Tenant: tenant, Cache: w.snapCache, Memo: w.snapMemo}
}

// readMarker returns the snapshot the workspace ws is a copy of, "" when
// none (a new session, or a copy nobody recorded).
func readMarker(ws string) string {
	b, err := os.ReadFile(ws + markerSuffix)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func writeMarker(ws, id string) error {
	if id == "" {
		if err := os.Remove(ws + markerSuffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	tmp := ws + markerSuffix + ".tmp"
	if err := os.WriteFile(tmp, []byte(id+"\n"), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, ws+markerSuffix)
}

// stateTrees are the engine's session dirs for req as snapshot trees,
// keyed by their tree name; session is the engine session the turn ended
// on ("" to restore).
func stateTrees(eng engine.Engine, req engine.Request, session string) map[string]snapshot.Tree {
	trees := map[string]snapshot.Tree{}
	if s, ok := eng.(engine.Sessions); ok {
		for _, d := range s.SessionState(req, session) {
			trees[statePrefix+d.Name] = snapshot.Tree{Dir: d.Dir, Match: d.Match}
		}
	}
	return trees
}

// restore makes the session's workspace and the engine's session dirs the
// job's snapshot, unless the workspace already is a copy of it, and
// returns the manifest the turn starts from (nil for a session with no
// snapshot yet). Before a restore the engine forgets what it held of the
// session in memory, stopping its warm processes: one would go on from an
// older turn.
func (w *Worker) restore(ctx context.Context, eng engine.Engine, req engine.Request, job events.Job) (*snapshot.Manifest, error) {
	ctx, cancel := context.WithTimeout(ctx, captureTimeout)
	defer cancel()
	snaps := w.snapshots(job.Tenant)
	local := readMarker(req.Workspace)
	if job.Snapshot == "" {
		if local == "" {
			return nil, nil
		}
		// HEAD moved to before any turn that left state: the session
		// starts again from an empty workspace.
		w.forget(eng, job)
		if _, err := snaps.Restore(ctx, &snapshot.Manifest{Trees: map[string][]snapshot.Entry{workspaceTree: {}}},
			map[string]string{workspaceTree: req.Workspace}); err != nil {
			return nil, err
		}
		return nil, writeMarker(req.Workspace, "")
	}
	m, err := snaps.Load(ctx, job.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w", job.Snapshot, err)
	}
	if local == job.Snapshot {
		return m, nil
	}
	dirs := map[string]string{workspaceTree: req.Workspace}
	for name, t := range stateTrees(eng, req, "") {
		dirs[name] = t.Dir
	}
	// Only the trees this worker knows where to put: a tree of an engine
	// session dir the adapter no longer names is left out.
	wanted := &snapshot.Manifest{ID: m.ID, Parent: m.Parent, Created: m.Created, Trees: map[string][]snapshot.Entry{}}
	for name, entries := range m.Trees {
		if _, ok := dirs[name]; ok {
			wanted.Trees[name] = entries
		} else {
			w.log.WarnContext(ctx, "snapshot tree not restored: the engine names no such dir", "tree", name, "snapshot", m.ID)
		}
	}
	if _, ok := wanted.Trees[workspaceTree]; !ok {
		wanted.Trees[workspaceTree] = []snapshot.Entry{}
	}
	// A snapshot without the engine's session dirs (a project's base holds
	// only the workspace) leaves those dirs as they are.
	for name := range dirs {
		if _, ok := wanted.Trees[name]; !ok {
			delete(dirs, name)
		}
	}
	owners := map[string]owner{}
	for _, d := range dirs {
		owners[d] = ownerOf(d)
	}
	// The chat's warm processes stop before their files are replaced: one
	// would go on from what it holds in memory, or write over the restored
	// files (a database it has open).
	w.forget(eng, job)
	started := time.Now()
	st, err := snaps.Restore(ctx, wanted, dirs)
	if err != nil {
		return nil, err
	}
	observe(ctx, "restore", started)
	for d, o := range owners {
		o.give(d)
	}
	w.log.InfoContext(ctx, "session restored from its snapshot", "snapshot", m.ID, "files", st.Files,
		"bytes", st.Bytes, "fetched", st.NewFiles, "took", st.Took)
	return m, writeMarker(req.Workspace, m.ID)
}

// forget tells the engine to drop the job's engine session from memory.
func (w *Worker) forget(eng engine.Engine, job events.Job) {
	if s, ok := eng.(engine.Sessions); ok {
		s.Forget(job.SessionID)
	}
}

// owner is who owns a directory the worker restores into (or, for one
// the restore creates, its nearest existing ancestor): a sandboxed
// agent's uid, which its files must keep so that an agent process already
// running (a warm one, or one serving several chats) can use them.
type owner struct {
	uid, gid int
	ok       bool
}

func ownerOf(dir string) owner {
	if os.Geteuid() != 0 {
		return owner{} // not root: everything is the worker's uid anyway
	}
	for d := dir; ; d = filepath.Dir(d) {
		if fi, err := os.Lstat(d); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				return owner{uid: int(st.Uid), gid: int(st.Gid), ok: true}
			}
			return owner{}
		}
		if d == filepath.Dir(d) {
			return owner{}
		}
	}
}

// give makes o the owner of everything under dir that another uid owns.
func (o owner) give(dir string) {
	if !o.ok {
		return
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != o.uid || int(st.Gid) != o.gid) {
				_ = os.Lchown(p, o.uid, o.gid)
			}
		}
		return nil
	})
}

// capture stores the session's state after a turn and says what it did:
// the snapshot, the files the turn changed, or why nothing was saved.
func (w *Worker) capture(ctx context.Context, eng engine.Engine, req engine.Request, prev *snapshot.Manifest, session string) *events.RunSnapshot {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), captureTimeout)
	defer cancel()
	snaps := w.snapshots(req.Tenant)
	trees := stateTrees(eng, req, session)
	trees[workspaceTree] = snapshot.Tree{Dir: req.Workspace}
	if w.cfg.WorkspaceQuota > 0 {
		if size, err := dirSize(req.Workspace); err == nil && size > w.cfg.WorkspaceQuota {
			snapshotFailures.Add(ctx, 1)
			return &events.RunSnapshot{Changes: []events.FileChange{}, Error: fmt.Sprintf(
				"the session's files were not saved: its workspace holds %d bytes, over the quota of %d", size, w.cfg.WorkspaceQuota)}
		}
	}
	started := time.Now()
	m, st, err := snaps.Capture(ctx, prev, trees)
	observe(ctx, "capture", started)
	if err != nil {
		snapshotFailures.Add(ctx, 1)
		return &events.RunSnapshot{Changes: []events.FileChange{}, Error: "the session's files were not saved: " + err.Error()}
	}
	changes := snapshot.Diff(prev, m, workspaceTree)
	if err := snaps.CountLines(ctx, prev, m, workspaceTree, changes); err != nil {
		w.log.WarnContext(ctx, "count changed lines", "err", err)
	}
	if err := writeMarker(req.Workspace, m.ID); err != nil {
		w.log.WarnContext(ctx, "record the workspace's snapshot", "err", err)
	}
	snapshotUploaded.Add(ctx, st.Uploaded)
	out := &events.RunSnapshot{ID: m.ID, Uploaded: st.Uploaded, Changes: make([]events.FileChange, 0, len(changes))}
	for _, e := range m.Trees[workspaceTree] {
		if e.Mode.IsRegular() {
			out.Files++
			out.Bytes += e.Size
		}
	}
	for _, c := range changes {
		out.Changes = append(out.Changes, events.FileChange{Path: c.Path, Kind: events.FileChangeKind(c.Kind), LinesAdded: c.Added,
			LinesRemoved: c.Removed, Binary: c.Binary})
	}
	return out
}

// dirSize is the total size of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// observe records how long a capture or restore took.
func observe(ctx context.Context, op string, started time.Time) {
	snapshotDuration.Record(ctx, time.Since(started).Seconds(), metric.WithAttributes(attribute.String("op", op)))
}
