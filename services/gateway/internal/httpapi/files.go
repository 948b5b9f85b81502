package httpapi

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// Getting a session's work out: its workspace as HEAD left it, read from
// the snapshot store under the caller's tenant, once chats has shown the
// session (or run) is one the caller may see.

// workspaceTree is the snapshot tree of a session's workspace (the worker
// captures the engine's session files as other trees).
const workspaceTree = "workspace"

const (
	defaultFilesPage = 200
	maxPatchBytes    = 1 << 20
	// archiveTimeout bounds writing one archive, past the server's
	// WriteTimeout, which suits JSON answers.
	archiveTimeout = 30 * time.Minute
)

var (
	prefixParam   = Param{"prefix", "string", "only paths starting with this"}
	cursorParam   = Param{"cursor", "string", "the nextCursor of the previous page: paths after it"}
	filesLimit    = Param{"limit", "integer", "page size, 1 to 1000 (default 200)"}
	filePathParam = Param{"path", "string", "the file's path, relative to the workspace (required)"}
)

// fileRoutes are the routes that read a session's files.
func (s *Server) fileRoutes(key func(tag, method, path, summary string, ep endpoint, query ...Param) Route) []Route {
	ok := http.StatusOK
	return []Route{
		key("files", "GET", "/v1/sessions/{id}/files", "The session's workspace files as HEAD left them, in path order, paged",
			handle(s, ok, s.listFiles), prefixParam, cursorParam, filesLimit),
		withErrors(key("files", "GET", "/v1/sessions/{id}/file", "One file of the session's workspace as HEAD left it: its bytes",
			s.stream("application/octet-stream", s.getFile), filePathParam),
			map[int]string{http.StatusBadRequest: "the path is missing, absolute, holds .. or names no regular file",
				http.StatusNotFound: "no such session, or no such file in its workspace",
				http.StatusRequestEntityTooLarge: "the file is larger than the gateway serves (MaxFileBytes, 10 MiB by default); " +
					"the message names both sizes: get it in the archive"}),
		key("files", "GET", "/v1/sessions/{id}/diff", "What the session changed: its workspace at HEAD against the project base it started from",
			handle(s, ok, s.sessionDiff)),
		key("files", "GET", "/v1/sessions/{id}/archive", "The session's workspace as HEAD left it, as a streamed tar.gz",
			s.stream("application/gzip", s.archive)),
		withErrors(key("files", "GET", "/v1/runs/{id}/diff", "What one turn changed: the workspace it left against the one it started from",
			handle(s, ok, s.runDiff)), map[int]string{http.StatusConflict: "the run has left no snapshot (it still runs, or none was taken)"}),
	}
}

// snapshotsOf is the tenant's view of the snapshot store.
func (s *Server) snapshotsOf(p identity.Principal) *snapshot.Snapshots {
	return &snapshot.Snapshots{Store: s.snapshots, Tenant: p.TenantID}
}

// load returns the manifest id, nil for "" (an empty workspace).
func load(ctx context.Context, snaps *snapshot.Snapshots, id string) (*snapshot.Manifest, error) {
	if id == "" {
		return nil, nil
	}
	return snaps.Load(ctx, id)
}

// head returns the session's workspace manifest at HEAD (nil: empty) after
// checking the caller may see the session.
func (s *Server) head(ctx context.Context, p identity.Principal, session string) (*snapshot.Snapshots, *snapshot.Manifest, error) {
	sess, err := s.chats.Session(ctx, p, session)
	if err != nil {
		return nil, nil, err
	}
	snaps := s.snapshotsOf(p)
	m, err := load(ctx, snaps, sess.HeadSnapshot)
	return snaps, m, err
}

func (s *Server) listFiles(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Files, error) {
	n, err := limit(r, defaultFilesPage)
	if err != nil {
		return api.Files{}, err
	}
	_, m, err := s.head(ctx, p, r.PathValue("id"))
	if err != nil || m == nil {
		return api.Files{Files: []api.File{}}, err
	}
	q := r.URL.Query()
	prefix, cursor := q.Get("prefix"), q.Get("cursor")
	entries := m.Trees[workspaceTree]
	from := max(prefix, cursor)
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Path >= from })
	if cursor != "" && i < len(entries) && entries[i].Path == cursor {
		i++
	}
	out := api.Files{Files: []api.File{}}
	for ; i < len(entries) && strings.HasPrefix(entries[i].Path, prefix); i++ {
		if len(out.Files) == n {
			out.NextCursor = out.Files[n-1].Path
			break
		}
		out.Files = append(out.Files, fileOf(entries[i]))
	}
	return out, nil
}

func fileOf(e snapshot.Entry) api.File {
	f := api.File{Path: e.Path, Type: "file", Mode: fmt.Sprintf("%04o", e.Mode.Perm()), Size: e.Size, SHA256: e.SHA, Link: e.Link}
	switch {
	case e.IsLink():
		f.Type = "symlink"
	case e.IsDir():
		f.Type = "dir"
	}
	return f
}

// cleanPath checks a client's path into a workspace: relative, clean, no
// "..".
func cleanPath(p string) (string, error) {
	switch {
	case p == "":
		return "", apierr.New(apierr.ErrInvalid, "path: missing; name a file of the workspace")
	case strings.HasPrefix(p, "/") || strings.Contains(p, `\`):
		return "", apierr.New(apierr.ErrInvalid, "path %q: want a path relative to the workspace, with / between names", p)
	case !fs.ValidPath(p):
		return "", apierr.New(apierr.ErrInvalid, "path %q: not a clean relative path (no .., no . or empty elements)", p)
	}
	return p, nil
}

// stream wraps a handler that writes its own body of media type; an error
// it returns before writing is answered as JSON like any other.
func (s *Server) stream(media string, f func(w http.ResponseWriter, r *http.Request, p identity.Principal) error) endpoint {
	return endpoint{in: noneType, out: noneType, media: media, status: http.StatusOK,
		serve: func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
			if err := f(w, r, p); err != nil {
				s.writeError(w, r, err)
			}
		}}
}

func (s *Server) getFile(w http.ResponseWriter, r *http.Request, p identity.Principal) error {
	ctx := r.Context()
	snaps, m, err := s.head(ctx, p, r.PathValue("id")) // first: another tenant's session is 404 whatever the path
	if err != nil {
		return err
	}
	name, err := cleanPath(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	var e snapshot.Entry
	found := false
	if m != nil {
		e, found = m.Find(workspaceTree, name)
	}
	switch {
	case !found:
		return apierr.New(apierr.ErrNotFound, "file %s not found in the session's workspace", name)
	case !e.IsFile():
		return apierr.New(apierr.ErrInvalid, "path %s: a %s, not a regular file", name, fileOf(e).Type)
	case e.Size > s.cfg.MaxFileBytes:
		return apierr.New(apierr.ErrTooLarge, "file %s: %d bytes, more than the %d bytes served one file at a time; get it in the archive",
			name, e.Size, s.cfg.MaxFileBytes)
	}
	rc, _, err := snaps.Open(ctx, m, workspaceTree, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 512)
	head, _ := br.Peek(512)
	h := w.Header()
	h.Set("Content-Type", contentType(name, head))
	h.Set("Content-Length", strconv.FormatInt(e.Size, 10))
	// Workspace files are the agent's: never rendered as the API's own pages.
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": path.Base(name)}))
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, br); err != nil {
		s.logger.ErrorContext(ctx, "file read failed", "path", name, "err", err)
		panic(http.ErrAbortHandler) // the client must not take a cut file for the whole
	}
	return nil
}

// contentType is the media type of a file: by its extension, else sniffed
// from its first bytes, else application/octet-stream.
func contentType(name string, head []byte) string {
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	if len(head) == 0 {
		return "application/octet-stream"
	}
	return http.DetectContentType(head)
}

func (s *Server) archive(w http.ResponseWriter, r *http.Request, p identity.Principal) error {
	ctx := r.Context()
	id := r.PathValue("id")
	snaps, m, err := s.head(ctx, p, id)
	if err != nil {
		return err
	}
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(archiveTimeout))
	w.Header().Set("Content-Type", "application/gzip")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": "session-" + id + ".tar.gz"}))
	w.WriteHeader(http.StatusOK)
	zw := gzip.NewWriter(w)
	if err := writeTar(ctx, snaps, m, zw); err != nil {
		s.logger.ErrorContext(ctx, "archive failed", "session", id, "err", err)
		panic(http.ErrAbortHandler) // a cut stream, never a valid-looking partial archive
	}
	return zw.Close()
}

// writeTar writes m's workspace as a tar stream; m may be nil (an empty
// archive). Directories and symlinks come first, in path order, then the
// files as the packs hold them, so each pack is read once.
func writeTar(ctx context.Context, snaps *snapshot.Snapshots, m *snapshot.Manifest, w io.Writer) error {
	tw := tar.NewWriter(w)
	if m == nil {
		return tw.Close()
	}
	header := func(e snapshot.Entry) *tar.Header {
		return &tar.Header{Name: e.Path, Mode: int64(e.Mode.Perm()), ModTime: m.Created, Format: tar.FormatPAX}
	}
	for _, e := range m.Trees[workspaceTree] {
		hdr := header(e)
		switch {
		case e.IsLink():
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, e.Link
		case e.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, e.Path+"/"
		default:
			continue
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
	}
	err := snaps.Files(ctx, m, workspaceTree, func(e snapshot.Entry, r io.Reader) error {
		hdr := header(e)
		hdr.Typeflag, hdr.Size = tar.TypeReg, e.Size
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

func (s *Server) sessionDiff(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Diff, error) {
	sess, err := s.chats.Session(ctx, p, r.PathValue("id"))
	if err != nil {
		return api.Diff{}, err
	}
	return s.diff(ctx, p, sess.BaseSnapshot, sess.HeadSnapshot)
}

func (s *Server) runDiff(ctx context.Context, r *http.Request, p identity.Principal, _ none) (api.Diff, error) {
	run, err := s.chats.Run(ctx, p, r.PathValue("id"))
	if err != nil {
		return api.Diff{}, err
	}
	if run.Snapshot == nil || run.Snapshot.ID == "" {
		return api.Diff{}, apierr.New(apierr.ErrConflict, "run %s has left no snapshot: it still runs, or none was taken", run.ID)
	}
	return s.diff(ctx, p, run.StartSnapshot, run.Snapshot.ID)
}

// diff compares the workspace of snapshots from and to ("" is empty).
func (s *Server) diff(ctx context.Context, p identity.Principal, from, to string) (api.Diff, error) {
	snaps := s.snapshotsOf(p)
	a, err := load(ctx, snaps, from)
	if err != nil {
		return api.Diff{}, err
	}
	b, err := load(ctx, snaps, to)
	if err != nil {
		return api.Diff{}, err
	}
	changes := snapshot.Diff(a, b, workspaceTree)
	if err := snaps.CountLines(ctx, a, b, workspaceTree, changes); err != nil {
		return api.Diff{}, err
	}
	patch, err := snaps.Patch(ctx, a, b, workspaceTree, maxPatchBytes)
	if err != nil {
		return api.Diff{}, err
	}
	out := api.Diff{From: from, To: to, Changes: make([]api.FileChange, len(changes)), Patch: patch.Text, Truncated: patch.Truncated}
	for i, c := range changes {
		out.Changes[i] = api.FileChange{Path: c.Path, Kind: c.Kind, LinesAdded: c.Added, LinesRemoved: c.Removed, Binary: c.Binary}
	}
	return out, nil
}
