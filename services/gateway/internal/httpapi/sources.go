package httpapi

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/source"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

// archiveFormats are the Content-Types that name an archive format; any
// other type (application/octet-stream, none) is told from the bytes.
var archiveFormats = map[string]source.Format{
	"application/x-tar":  source.FormatTar,
	"application/gzip":   source.FormatTarGz,
	"application/x-gzip": source.FormatTarGz,
	"application/x-gtar": source.FormatTarGz,
	"application/zip":    source.FormatZip,
}

// archiveEndpoint serves uploadArchive: the body is the archive itself,
// not JSON, so it bypasses handle's decoding and the JSON body cap.
func (s *Server) archiveEndpoint() endpoint {
	types := []string{"application/octet-stream"}
	for mt := range archiveFormats {
		types = append(types, mt)
	}
	slices.Sort(types)
	return endpoint{in: noneType, out: reflect.TypeFor[api.Project](), status: http.StatusOK, binary: types,
		serve: func(w http.ResponseWriter, r *http.Request, p identity.Principal) {
			pr, err := s.uploadArchive(r.Context(), w, r, p)
			if err != nil {
				s.writeError(w, r, err)
				return
			}
			writeJSON(w, http.StatusOK, pr)
		}}
}

// uploadArchive makes an uploaded tar, tar.gz or zip the project's base:
// it is unpacked into a private temporary directory (source.Extract
// refuses hostile entries and bombs), captured as the workspace tree of a
// new snapshot, and set as the base if the base has not moved meanwhile.
// On any refusal the base stays as it was.
func (s *Server) uploadArchive(ctx context.Context, w http.ResponseWriter, r *http.Request, p identity.Principal) (api.Project, error) {
	id := r.PathValue("id")
	pr, err := s.store.ManagedProject(ctx, p, id)
	if err != nil {
		return api.Project{}, err
	}
	body := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, s.cfg.MaxArchiveBytes), 4096)
	format, err := archiveFormat(r, body)
	if err != nil {
		return api.Project{}, err
	}
	tmp, err := os.MkdirTemp("", "clopen-archive-")
	if err != nil {
		return api.Project{}, err
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "files")
	if _, err := source.Extract(ctx, body, -1, format, dir, s.cfg.ArchiveLimits); err != nil {
		return api.Project{}, archiveErr(err)
	}
	snaps := &snapshot.Snapshots{Store: s.snapshots, Tenant: p.TenantID}
	m, _, err := snaps.Capture(ctx, nil, map[string]snapshot.Tree{snapshot.WorkspaceTree: {Dir: dir}})
	if err != nil {
		return api.Project{}, err
	}
	return s.setBase(ctx, p, pr, identity.BaseChange{Snapshot: m.ID, Source: &api.ProjectSource{Kind: api.SourceArchive},
		Action: "project.archive.upload"})
}

// setBase records a new base and source of project pr, compare-and-set on
// the base pr was read with, and returns the project as it is now.
func (s *Server) setBase(ctx context.Context, p identity.Principal, pr api.Project, c identity.BaseChange) (api.Project, error) {
	c.Prev = pr.BaseSnapshot
	if err := s.store.SetBase(ctx, p.Actor(), p.TenantID, pr.ID, c); err != nil {
		return api.Project{}, err
	}
	return s.store.Project(ctx, p, pr.ID)
}

// archiveFormat is the format the Content-Type names, else the one the
// first bytes show.
func archiveFormat(r *http.Request, body *bufio.Reader) (source.Format, error) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err == nil {
		if f, ok := archiveFormats[mt]; ok {
			return f, nil
		}
	}
	head, err := body.Peek(512)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return "", err
	case len(head) == 0:
		return "", apierr.New(apierr.ErrInvalid, "request body: empty, want a tar, tar.gz or zip archive")
	}
	f, err := source.DetectFormat(head, "")
	if err != nil {
		return "", apierr.New(apierr.ErrInvalid, "%v", err)
	}
	return f, nil
}

// archiveErr maps Extract's refusals to 400 naming the entry and reason,
// and a body past the size cap to 413.
func archiveErr(err error) error {
	var ae *source.ArchiveError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return err
	case errors.As(err, &ae):
		return apierr.New(apierr.ErrInvalid, "archive refused: %v", ae)
	case errors.Is(err, source.ErrUnknownFormat):
		return apierr.New(apierr.ErrInvalid, "%v", err)
	}
	return err
}

// putSource sets a project's git source and imports it: the credential,
// if given, is sealed in artifacts first; a worker clones the repository
// into a snapshot, which becomes the base (compare-and-set on the base the
// project had).
func (s *Server) putSource(ctx context.Context, r *http.Request, p identity.Principal, in api.SourceInput) (api.Project, error) {
	pr, err := s.store.ManagedProject(ctx, p, r.PathValue("id"))
	if err != nil {
		return api.Project{}, err
	}
	return s.importGit(ctx, p, pr, in)
}

func (s *Server) importGit(ctx context.Context, p identity.Principal, pr api.Project, in api.SourceInput) (api.Project, error) {
	in.URL, in.Branch = strings.TrimSpace(in.URL), strings.TrimSpace(in.Branch)
	switch {
	case in.Kind != api.SourceGit:
		return api.Project{}, apierr.New(apierr.ErrInvalid, "source.kind: want git (upload an archive with POST /v1/projects/{id}/archive)")
	case in.URL == "":
		return api.Project{}, apierr.New(apierr.ErrInvalid, "source.url: missing")
	}
	if in.Credential != nil {
		if err := s.artifacts.PutSourceCredential(ctx, p, pr.ID, *in.Credential); err != nil {
			return api.Project{}, err
		}
	}
	got, err := s.engines.Clone(ctx, p, events.CloneRequest{ProjectID: pr.ID, URL: in.URL, Branch: in.Branch})
	if err != nil {
		return api.Project{}, err
	}
	return s.setBase(ctx, p, pr, identity.BaseChange{Snapshot: got.Snapshot, Commit: got.Commit,
		Source: &api.ProjectSource{Kind: api.SourceGit, URL: in.URL, Branch: got.Branch}, Action: "project.source.set"})
}

// pushSession pushes the files of the session's HEAD to a branch of its
// project's repository, through a worker's fresh clone.
func (s *Server) pushSession(ctx context.Context, r *http.Request, p identity.Principal, in api.PushSession) (api.PushResult, error) {
	ss, err := s.chats.Session(ctx, p, r.PathValue("id"))
	if err != nil {
		return api.PushResult{}, err
	}
	pr, err := s.store.Project(ctx, p, ss.ProjectID)
	if err != nil {
		return api.PushResult{}, err
	}
	if pr.Source.Kind != api.SourceGit {
		return api.PushResult{}, apierr.New(apierr.ErrConflict, "project has no git source")
	}
	branch := cmp.Or(strings.TrimSpace(in.Branch), "clopen/"+ss.ID)
	msg := strings.TrimSpace(in.Message)
	if msg == "" {
		msg = "Clopen session " + ss.ID
		if t := strings.TrimSpace(ss.Title); t != "" {
			msg = t + "\n\nFrom Clopen session " + ss.ID + "."
		}
	}
	got, err := s.engines.Push(ctx, p, events.PushRequest{ProjectID: pr.ID, URL: pr.Source.URL, BaseBranch: pr.Source.Branch,
		Snapshot: ss.HeadSnapshot, Branch: branch, Message: msg, AuthorName: p.UserName, AuthorEmail: p.Email})
	if err != nil {
		return api.PushResult{}, err
	}
	return api.PushResult{Commit: got.Commit, Branch: got.Branch, Remote: got.Remote}, nil
}
