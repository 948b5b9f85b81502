package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/pkg/platform/source"
	"clopen.dev/pkg/platform/svc"
)

// sourceTimeout bounds one clone or push, transfer and snapshot included;
// the gateway waits as long.
const sourceTimeout = 4 * time.Minute

// credentialUser is the username sent with a bare token: the forges accept
// any name with a token, and this is the one GitHub documents.
const credentialUser = "x-access-token"

// addSourceEndpoints serves svc.engine.source.clone and .push on s: every
// worker does, whatever engines it has.
func (w *Worker) addSourceEndpoints(s micro.Service, srv *svc.Server) error {
	onInternal := func(err error) { w.log.Error("source request", "err", err) }
	for op, h := range map[string]svc.Endpoint{
		events.OpSourceClone: svc.Handler(onInternal, w.cloneSource),
		events.OpSourcePush:  svc.Handler(onInternal, w.pushSource),
	} {
		subject, err := events.SourceSubject(op)
		if err != nil {
			return err
		}
		if err := s.AddEndpoint("source-"+op, srv.Bind(h), micro.WithEndpointSubject(subject), micro.WithEndpointQueueGroup(QueueGroup)); err != nil {
			return fmt.Errorf("endpoint %s: %w", subject, err)
		}
	}
	return nil
}

// gitOptions is the git policy of this worker's configuration.
func (w *Worker) gitOptions() []source.Option {
	var opts []source.Option
	if w.cfg.GitAllowLocal {
		opts = append(opts, source.AllowLocal())
	}
	if w.cfg.GitCAFile != "" {
		opts = append(opts, source.CAFile(w.cfg.GitCAFile))
	}
	return opts
}

// sourceRepo checks a request's caller and project and returns its
// repository with the project's credential, resolved in artifacts with the
// caller's token (the request's context carries it).
func (w *Worker) sourceRepo(ctx context.Context, c events.Caller, project, url, branch string) (source.Repo, error) {
	if err := w.checkScope(ctx, "", "", c, ""); err != nil {
		return source.Repo{}, err
	}
	if err := events.ValidToken(project); err != nil || strings.ContainsAny(project, `/\`) {
		return source.Repo{}, svc.Invalid("a source request needs the project")
	}
	if err := source.ValidateURL(url, w.gitOptions()...); err != nil {
		return source.Repo{}, svc.Invalid("%v", err)
	}
	subject, err := events.ServiceSubject(events.ArtifactsService, events.OpSourceCredentialResolve)
	if err != nil {
		return source.Repo{}, err
	}
	var cred events.SourceCredential
	cctx, cancel := context.WithTimeout(ctx, planTimeout)
	defer cancel()
	if err := svc.Call(cctx, w.bus, subject, events.ProjectRef{Caller: c, ProjectID: project}, &cred); err != nil {
		var apiErr *events.APIError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusServiceUnavailable {
			return source.Repo{}, svc.Unavailable("artifacts service unavailable, cannot read the project's credential: %s", apiErr.Message)
		}
		return source.Repo{}, fmt.Errorf("resolve the project's credential: %w", err)
	}
	repo := source.Repo{URL: url, Branch: branch}
	if cred.Credential != "" {
		user, token, ok := strings.Cut(cred.Credential, ":")
		if !ok {
			user, token = credentialUser, cred.Credential
		}
		repo.Credential = &source.Credential{Username: user, Token: token}
	}
	return repo, nil
}

// scratch makes a private temporary directory for a source op under the
// tenant's workspaces, never inside a session's workspace.
func (w *Worker) scratch(tenant string) (string, func(), error) {
	base := filepath.Join(w.cfg.Workspaces, tenant)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", nil, fmt.Errorf("scratch dir: %w", err)
	}
	dir, err := os.MkdirTemp(base, ".source-")
	if err != nil {
		return "", nil, fmt.Errorf("scratch dir: %w", err)
	}
	return dir, func() { _ = os.RemoveAll(dir) }, nil
}

// cloneSource clones a project's repository and captures the checkout as
// a snapshot whose workspace tree is the project's files (its .git
// included, so a session's workspace is a repository).
func (w *Worker) cloneSource(ctx context.Context, req events.CloneRequest) (events.CloneReply, error) {
	repo, err := w.sourceRepo(ctx, req.Caller, req.ProjectID, req.URL, req.Branch)
	if err != nil {
		return events.CloneReply{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	tmp, cleanup, err := w.scratch(req.TenantID)
	if err != nil {
		return events.CloneReply{}, err
	}
	defer cleanup()
	dir := filepath.Join(tmp, "repo")
	head, err := source.Clone(ctx, repo, dir, w.gitOptions()...)
	if err != nil {
		return events.CloneReply{}, gitError(err)
	}
	branch := req.Branch
	if branch == "" {
		if b, err := scratchGit(ctx, dir, "symbolic-ref", "--short", "HEAD"); err == nil {
			branch = strings.TrimSpace(b)
		}
	}
	m, _, err := w.snapshots(req.TenantID).Capture(ctx, nil, map[string]snapshot.Tree{snapshot.WorkspaceTree: {Dir: dir}})
	if err != nil {
		return events.CloneReply{}, fmt.Errorf("capture the clone: %w", err)
	}
	w.log.InfoContext(ctx, "project source cloned", "tenant", req.TenantID, "project", req.ProjectID, "commit", head, "snapshot", m.ID)
	return events.CloneReply{Snapshot: m.ID, Commit: head, Branch: branch}, nil
}

// inGitDir reports a path inside a .git directory at any depth: a
// snapshot's repository metadata is the agent's to write, so a push never
// takes it (a core.fsmonitor or hook there would run on the worker).
func inGitDir(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if part == ".git" {
			return true
		}
	}
	return false
}

// pushSource pushes a session's files: a fresh clone of the project's
// branch, its working tree made exactly the snapshot's workspace files
// (added, changed and deleted; no .git of the snapshot's), committed as
// the author and pushed to the requested branch. git never runs in the
// session's own workspace.
func (w *Worker) pushSource(ctx context.Context, req events.PushRequest) (events.PushReply, error) {
	repo, err := w.sourceRepo(ctx, req.Caller, req.ProjectID, req.URL, req.BaseBranch)
	if err != nil {
		return events.PushReply{}, err
	}
	if req.Snapshot == "" {
		return events.PushReply{}, svc.Invalid("the session has no files to push")
	}
	ctx, cancel := context.WithTimeout(ctx, sourceTimeout)
	defer cancel()
	snaps := w.snapshots(req.TenantID)
	m, err := snaps.Load(ctx, req.Snapshot)
	if errors.Is(err, snapshot.ErrNotFound) {
		return events.PushReply{}, svc.NotFound("snapshot %s not found", req.Snapshot)
	}
	if err != nil {
		return events.PushReply{}, fmt.Errorf("load snapshot %s: %w", req.Snapshot, err)
	}
	tmp, cleanup, err := w.scratch(req.TenantID)
	if err != nil {
		return events.PushReply{}, err
	}
	defer cleanup()
	dir := filepath.Join(tmp, "repo")
	if _, err := source.Clone(ctx, repo, dir, w.gitOptions()...); err != nil {
		return events.PushReply{}, gitError(err)
	}
	files := &snapshot.Manifest{ID: m.ID, Parent: m.Parent, Created: m.Created, Trees: map[string][]snapshot.Entry{snapshot.WorkspaceTree: {}}}
	for _, e := range m.Trees[snapshot.WorkspaceTree] {
		if !inGitDir(e.Path) {
			files.Trees[snapshot.WorkspaceTree] = append(files.Trees[snapshot.WorkspaceTree], e)
		}
	}
	skipGit := func(rel string, _ bool) bool { return inGitDir(rel) }
	if _, err := snaps.RestoreTrees(ctx, files, map[string]snapshot.Tree{snapshot.WorkspaceTree: {Dir: dir, Skip: skipGit}}); err != nil {
		return events.PushReply{}, fmt.Errorf("lay the session's files over the clone: %w", err)
	}
	author := source.Author{Name: req.AuthorName, Email: req.AuthorEmail}
	if author.Name == "" || author.Email == "" {
		author = source.Author{Name: "Clopen", Email: "clopen@localhost"}
	}
	res, err := source.Push(ctx, repo, dir, req.Branch, req.Message, author, w.gitOptions()...)
	if err != nil {
		return events.PushReply{}, gitError(err)
	}
	w.log.InfoContext(ctx, "session pushed", "tenant", req.TenantID, "project", req.ProjectID, "branch", res.Branch, "commit", res.Commit)
	return events.PushReply{Commit: res.Commit, Branch: res.Branch, Remote: res.Remote}, nil
}

// gitError maps a clone's or push's failure to the error the caller gets.
func gitError(err error) error {
	switch {
	case errors.Is(err, source.ErrURL):
		return svc.Invalid("%v", err)
	case errors.Is(err, source.ErrAuth):
		return svc.Errorf(http.StatusUnprocessableEntity, "git_auth_failed", "%v", err)
	case errors.Is(err, source.ErrBranchNotFound):
		return svc.Errorf(http.StatusUnprocessableEntity, "git_branch_not_found", "%v", err)
	case errors.Is(err, source.ErrNotRepository):
		return svc.Errorf(http.StatusUnprocessableEntity, "git_not_a_repository", "%v", err)
	case errors.Is(err, context.DeadlineExceeded):
		return svc.Errorf(http.StatusGatewayTimeout, "timeout", "%v", err)
	}
	var apiErr *events.APIError
	if errors.As(err, &apiErr) {
		return err
	}
	return svc.Errorf(http.StatusBadGateway, "git_failed", "%v", err)
}

// scratchGit runs a read-only git command in a clone the worker just made
// in its scratch space, with no user or system config. Never in a session
// workspace: the agent writes that repository's config.
func scratchGit(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-c", "core.quotepath=off"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0", "LANG=C"}
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", args[0], err)
	}
	return string(out), nil
}
