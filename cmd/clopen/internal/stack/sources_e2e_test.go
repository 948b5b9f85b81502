package stack

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway/api"
)

// gitRun runs git for a fixture, with no user or system configuration.
func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=f@example.com", "GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=f@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// fixtureRepo makes root/name.git, a bare repository whose main holds
// README.md and src/a.txt, and returns its path and main's commit.
func fixtureRepo(t *testing.T, root, name string) (string, string) {
	t.Helper()
	bare := filepath.Join(root, name+".git")
	gitRun(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	gitRun(t, bare, "config", "http.receivepack", "true")
	work := t.TempDir()
	gitRun(t, work, "init", "--quiet", "--initial-branch=main")
	for p, c := range map[string]string{"README.md": "# " + name + "\n", "src/a.txt": "a\n"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(work, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitRun(t, work, "add", ".")
	gitRun(t, work, "commit", "--quiet", "-m", "initial")
	gitRun(t, work, "push", "--quiet", bare, "main")
	return bare, gitRun(t, bare, "rev-parse", "main")
}

// privateGit serves the bare repositories under root with git http-backend
// over https, for basic auth user:secret only; it returns the base URL
// and the server's certificate as a PEM file.
func privateGit(t *testing.T, root, user, secret string) (string, string) {
	t.Helper()
	backend := filepath.Join(gitRun(t, "", "--exec-path"), "git-http-backend")
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != user || p != secret {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, ca
}

// wantAPIStatus is wantStatus that also checks the error code, when given.
func wantAPIStatus(t *testing.T, what string, err error, status int, code string) {
	t.Helper()
	wantStatus(t, what, err, status)
	if e, ok := err.(*events.APIError); ok && code != "" && e.Code != code {
		t.Errorf("%s: code = %s, want %s", what, e.Code, code)
	}
}

// TestProjectSources imports projects from git (a local repository, and a
// private one over https with basic auth) and an archive, starts sessions
// from their bases, and pushes a session's changed files to a branch.
func TestProjectSources(t *testing.T) {
	root := t.TempDir()
	pub, pubHead := fixtureRepo(t, root, "pub")
	_, privHead := fixtureRepo(t, root, "priv")
	url, ca := privateGit(t, root, "x-token", "s3cret-value")

	dir := t.TempDir()
	wc := worker.DefaultConfig()
	wc.Workspaces, wc.GitAllowLocal, wc.GitCAFile = dir, true, ca
	h := start(t, Config{Dir: dir, Worker: wc})
	a, b := h.account("src-a"), h.account("src-b")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// A public repository, cloned from a local bare one.
	pr, err := a.c.CreateProject(ctx, api.CreateProject{Name: "pub", Source: &api.SourceInput{Kind: api.SourceGit, URL: pub}})
	if err != nil {
		t.Fatalf("create with a git source: %v", err)
	}
	if pr.Source.Kind != api.SourceGit || pr.Source.URL != pub || pr.Source.Branch != "main" || pr.BaseCommit != pubHead || pr.BaseSnapshot == "" {
		t.Fatalf("git project = %+v, want main at %s", pr, pubHead)
	}

	// A private one: the wrong credential is the auth error and leaves no
	// project; the right one imports it.
	wrong := "x-token:nope"
	_, err = a.c.CreateProject(ctx, api.CreateProject{Name: "priv", Source: &api.SourceInput{Kind: api.SourceGit, URL: url + "/priv.git", Credential: &wrong}})
	wantAPIStatus(t, "wrong credential", err, http.StatusUnprocessableEntity, "git_auth_failed")
	if ps, _ := a.c.Projects(ctx); len(ps) != 2 {
		t.Errorf("projects after a failed import = %+v, want main and pub only", ps)
	}
	right := "x-token:s3cret-value"
	priv, err := a.c.CreateProject(ctx, api.CreateProject{Name: "priv", Source: &api.SourceInput{Kind: api.SourceGit, URL: url + "/priv.git", Credential: &right}})
	if err != nil || priv.BaseCommit != privHead {
		t.Fatalf("private import = %+v, %v; want commit %s", priv, err, privHead)
	}
	// Re-importing keeps the stored credential.
	if again, err := a.c.SetSource(ctx, priv.ID, api.SourceInput{Kind: api.SourceGit, URL: url + "/priv.git"}); err != nil || again.BaseCommit != privHead {
		t.Errorf("re-import with the stored credential = %+v, %v", again, err)
	}
	_, err = a.c.SetSource(ctx, pr.ID, api.SourceInput{Kind: api.SourceGit, URL: pub, Branch: "nope"})
	wantAPIStatus(t, "missing branch", err, http.StatusUnprocessableEntity, "git_branch_not_found")
	_, err = a.c.SetSource(ctx, pr.ID, api.SourceInput{Kind: api.SourceGit, URL: "ssh://example.com/x.git"})
	wantAPIStatus(t, "ssh URL", err, http.StatusBadRequest, "")
	_, err = a.c.SetSource(ctx, pr.ID, api.SourceInput{Kind: api.SourceGit, URL: root})
	wantAPIStatus(t, "not a repository", err, http.StatusUnprocessableEntity, "")
	_, err = b.c.SetSource(ctx, pr.ID, api.SourceInput{Kind: api.SourceGit, URL: pub})
	wantAPIStatus(t, "other tenant", err, http.StatusNotFound, "not_found")
	if p, _ := a.c.Project(ctx, pr.ID); p.BaseSnapshot != pr.BaseSnapshot {
		t.Errorf("refused imports moved the base to %s", p.BaseSnapshot)
	}

	// A session starts from the base; the agent changes files (and plants
	// a .git/config that would run a program) while its turn runs.
	s, err := a.c.CreateSession(ctx, pr.ID, api.CreateSession{Engine: events.EngineScripted, Model: "scripted/slow"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.c.Session(ctx, s.ID); got.HeadSnapshot != pr.BaseSnapshot {
		t.Errorf("new session's headSnapshot = %q, want the base %q", got.HeadSnapshot, pr.BaseSnapshot)
	}
	turn, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "go"})
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(dir, me.Tenant.ID, pr.ID, "sessions", s.ID)
	for {
		if _, err := os.Stat(filepath.Join(ws, "src", "a.txt")); err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the session's workspace never got the base's files")
		}
		time.Sleep(20 * time.Millisecond)
	}
	marker := filepath.Join(root, "fsmonitor-ran")
	for p, c := range map[string]string{"README.md": "# changed\n", "new.txt": "new\n",
		".git/config": "[core]\n\tfsmonitor = touch " + marker + "\n"} {
		if err := os.WriteFile(filepath.Join(ws, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Remove(filepath.Join(ws, "src", "a.txt")); err != nil {
		t.Fatal(err)
	}
	for {
		r, err := a.c.Run(ctx, turn.RunID)
		if err == nil && r.State.Terminal() {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("run %s did not end", turn.RunID)
		}
		time.Sleep(100 * time.Millisecond)
	}

	res, err := a.c.PushSession(ctx, s.ID, api.PushSession{})
	if err != nil {
		t.Fatalf("push: %v", err)
	}
	branch := "clopen/" + s.ID
	if res.Branch != branch || res.Commit == "" {
		t.Fatalf("push = %+v, want branch %s", res, branch)
	}
	if got := gitRun(t, pub, "rev-parse", branch); got != res.Commit {
		t.Errorf("remote %s = %s, want the pushed %s", branch, got, res.Commit)
	}
	if got := gitRun(t, pub, "show", branch+":README.md"); got != "# changed" {
		t.Errorf("README.md on the branch = %q", got)
	}
	if got := gitRun(t, pub, "show", branch+":new.txt"); got != "new" {
		t.Errorf("new.txt on the branch = %q", got)
	}
	if got := gitRun(t, pub, "ls-tree", "-r", "--name-only", branch); got != "README.md\nnew.txt" {
		t.Errorf("files on the branch = %q, want README.md and new.txt (src/a.txt deleted)", got)
	}
	if got := gitRun(t, pub, "log", "-1", "--format=%an <%ae>|%P", branch); got != "Admin <admin@src-a>|"+pubHead {
		t.Errorf("pushed commit = %q, want the caller as author on top of main", got)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the session's .git/config ran a program during the push")
	}

	// A push to the private remote goes with the stored credential; an
	// untouched session pushes the base's commit as its branch.
	ps := a.session(t, ctx, priv.ID)
	pres, err := a.c.PushSession(ctx, ps, api.PushSession{Branch: "review/one", Message: "nothing new"})
	if err != nil || pres.Branch != "review/one" {
		t.Fatalf("push to the private remote = %+v, %v", pres, err)
	}
	if got := gitRun(t, filepath.Join(root, "priv.git"), "rev-parse", "review/one"); got != privHead || pres.Commit != privHead {
		t.Errorf("review/one = %s (push said %s), want the base commit %s", got, pres.Commit, privHead)
	}

	// Only git projects push; another tenant does not see the session.
	_, err = a.c.PushSession(ctx, a.session(t, ctx, a.project.ID), api.PushSession{})
	wantAPIStatus(t, "push without git", err, http.StatusConflict, "")
	_, err = b.c.PushSession(ctx, s.ID, api.PushSession{})
	wantAPIStatus(t, "other tenant's push", err, http.StatusNotFound, "not_found")

	// An uploaded archive becomes the base a new session starts from.
	arch, err := a.c.UploadArchive(ctx, a.project.ID, "", bytes.NewReader(tarGzOf(t, "hello.txt", "hi\n")))
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	s2, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineScripted})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.c.Session(ctx, s2.ID); got.HeadSnapshot == "" || got.HeadSnapshot != arch.BaseSnapshot {
		t.Errorf("session on the archive base: headSnapshot = %q, want %q", got.HeadSnapshot, arch.BaseSnapshot)
	}
}

// session creates a session in project and returns its id.
func (a account) session(t *testing.T, ctx context.Context, project string) string {
	t.Helper()
	s, err := a.c.CreateSession(ctx, project, api.CreateSession{Engine: events.EngineScripted})
	if err != nil {
		t.Fatal(err)
	}
	return s.ID
}

// tarGzOf is a tar.gz holding one file.
func tarGzOf(t *testing.T, name, content string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte(content))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
