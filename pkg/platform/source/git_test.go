package source

import (
	"context"
	"encoding/pem"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const token = "s3cr3t-t0ken-value"

// gitT runs git for a test fixture, outside the package's policy.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// bareRepo makes root/name.git with one commit on main and one on dev.
func bareRepo(t *testing.T, root, name string) string {
	bare := filepath.Join(root, name+".git")
	gitT(t, root, "init", "--quiet", "--bare", "--initial-branch=main", bare)
	gitT(t, bare, "config", "http.receivepack", "true")
	work := t.TempDir()
	gitT(t, work, "init", "--quiet", "--initial-branch=main")
	os.WriteFile(filepath.Join(work, "README"), []byte("hello\n"), 0o644)
	gitT(t, work, "add", ".")
	gitT(t, work, "commit", "--quiet", "-m", "first")
	gitT(t, work, "checkout", "--quiet", "-b", "dev")
	os.WriteFile(filepath.Join(work, "DEV"), []byte("dev\n"), 0o644)
	gitT(t, work, "add", ".")
	gitT(t, work, "commit", "--quiet", "-m", "dev work")
	gitT(t, work, "push", "--quiet", bare, "main", "dev")
	return bare
}

// privateServer serves the bare repositories under root over smart HTTP
// with git http-backend, behind https and basic auth.
func privateServer(t *testing.T, root string) (url, caFile string) {
	backend := filepath.Join(gitT(t, "", "--exec-path"), "git-http-backend")
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend: %v", err)
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}, Stderr: io.Discard}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "x-token" || p != token {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, pemBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	return srv.URL, caFile
}

// noSecret fails if the token appears in any file under dir.
func noSecret(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), token) {
			t.Errorf("token found in %s", p)
		}
		return nil
	})
}

func TestClonePrivateOverHTTPS(t *testing.T) {
	root := t.TempDir()
	bare := bareRepo(t, root, "proj")
	url, ca := privateServer(t, root)
	repo := Repo{URL: url + "/proj.git", Credential: &Credential{Username: "x-token", Token: token}}
	ctx := context.Background()

	dir := filepath.Join(t.TempDir(), "clone")
	head, err := Clone(ctx, repo, dir, CAFile(ca))
	if err != nil {
		t.Fatalf("Clone: %v", err)
	}
	if want := gitT(t, bare, "rev-parse", "main"); head != want {
		t.Errorf("Clone head = %s, want %s", head, want)
	}
	if n := gitT(t, dir, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("clone has %s commits, want 1 (shallow)", n)
	}
	noSecret(t, dir)

	t.Run("branch", func(t *testing.T) {
		r := repo
		r.Branch = "dev"
		dir := filepath.Join(t.TempDir(), "clone")
		head, err := Clone(ctx, r, dir, CAFile(ca))
		if err != nil {
			t.Fatalf("Clone dev: %v", err)
		}
		if want := gitT(t, bare, "rev-parse", "dev"); head != want {
			t.Errorf("Clone dev head = %s, want %s", head, want)
		}
	})
	tests := []struct {
		name string
		give Repo
		want error
	}{
		{"wrong token", Repo{URL: repo.URL, Credential: &Credential{Username: "x-token", Token: "wrong-" + token}}, ErrAuth},
		{"no credential", Repo{URL: repo.URL}, ErrAuth},
		{"missing branch", Repo{URL: repo.URL, Branch: "nope", Credential: repo.Credential}, ErrBranchNotFound},
		{"missing repo", Repo{URL: url + "/nope.git", Credential: repo.Credential}, ErrNotRepository},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Clone(ctx, tt.give, filepath.Join(t.TempDir(), "clone"), CAFile(ca))
			if !errors.Is(err, tt.want) {
				t.Fatalf("Clone error = %v, want %v", err, tt.want)
			}
			t.Logf("Clone error: %v", err)
			if strings.Contains(err.Error(), token) {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}
}

func TestPushSessionBranch(t *testing.T) {
	root := t.TempDir()
	bare := bareRepo(t, root, "proj")
	url, ca := privateServer(t, root)
	repo := Repo{URL: url + "/proj.git", Credential: &Credential{Username: "x-token", Token: token}}
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "clone")
	if _, err := Clone(ctx, repo, dir, CAFile(ca)); err != nil {
		t.Fatalf("Clone: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "NEW"), []byte("from the session\n"), 0o644)
	// A hook in the workspace must not run.
	marker := filepath.Join(t.TempDir(), "hook-ran")
	os.WriteFile(filepath.Join(dir, ".git/hooks/pre-commit"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)
	os.WriteFile(filepath.Join(dir, ".git/hooks/pre-push"), []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755)

	res, err := Push(ctx, repo, dir, "clopen/s-123", "session s-123", Author{Name: "Clopen", Email: "bot@clopen.dev"}, CAFile(ca))
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	if got := gitT(t, "", "--git-dir", bare, "rev-parse", "clopen/s-123"); got != res.Commit {
		t.Errorf("remote clopen/s-123 = %s, want pushed commit %s", got, res.Commit)
	}
	if got := gitT(t, "", "--git-dir", bare, "log", "-1", "--format=%an <%ae> %s", "clopen/s-123"); got != "Clopen <bot@clopen.dev> session s-123" {
		t.Errorf("remote log = %q", got)
	}
	if got := gitT(t, "", "--git-dir", bare, "show", "clopen/s-123:NEW"); got != "from the session" {
		t.Errorf("remote NEW = %q", got)
	}
	if res.Branch != "clopen/s-123" || !strings.Contains(res.Remote, "refs/heads/clopen/s-123") {
		t.Errorf("PushResult = %+v", res)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a workspace hook ran")
	}
	noSecret(t, dir)

	bad := Repo{URL: repo.URL, Credential: &Credential{Username: "x-token", Token: "bad-" + token}}
	if _, err := Push(ctx, bad, dir, "clopen/s-124", "again", Author{Name: "C", Email: "c@x"}, CAFile(ca)); !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), token) {
		t.Errorf("Push with a bad token: %v, want ErrAuth without the token", err)
	}
}

func TestPushRefusesDangerousConfig(t *testing.T) {
	root := t.TempDir()
	bare := bareRepo(t, root, "proj")
	dir := filepath.Join(t.TempDir(), "clone")
	ctx := context.Background()
	if _, err := Clone(ctx, Repo{URL: bare}, dir, AllowLocal()); err != nil {
		t.Fatalf("Clone local: %v", err)
	}
	marker := filepath.Join(t.TempDir(), "ran")
	gitT(t, dir, "config", "core.fsmonitor", "touch "+marker)
	_, err := Push(ctx, Repo{URL: bare}, dir, "clopen/s", "m", Author{Name: "a", Email: "a@x"}, AllowLocal())
	if err == nil || !strings.Contains(err.Error(), "core.fsmonitor") {
		t.Fatalf("Push error = %v, want a refusal naming core.fsmonitor", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the configured program ran")
	}
}

func TestCloneLocalNeedsOption(t *testing.T) {
	bare := bareRepo(t, t.TempDir(), "proj")
	if _, err := Clone(context.Background(), Repo{URL: bare}, filepath.Join(t.TempDir(), "c")); !errors.Is(err, ErrURL) {
		t.Errorf("Clone of a local path without AllowLocal = %v, want ErrURL", err)
	}
	if _, err := Clone(context.Background(), Repo{URL: "file://" + bare}, filepath.Join(t.TempDir(), "c"), AllowLocal()); err != nil {
		t.Errorf("Clone file:// with AllowLocal: %v", err)
	}
	for _, missing := range []string{filepath.Join(t.TempDir(), "none"), t.TempDir()} {
		if _, err := Clone(context.Background(), Repo{URL: missing}, filepath.Join(t.TempDir(), "c"), AllowLocal()); !errors.Is(err, ErrNotRepository) {
			t.Errorf("Clone of %s, no repository = %v, want ErrNotRepository", missing, err)
		}
	}
}

func TestValidateURL(t *testing.T) {
	tests := []struct {
		give  string
		local bool
		ok    bool
	}{
		{"https://github.com/acme/app.git", false, true},
		{"https://git.example.com:8443/a/b", false, true},
		{"https://user:pw@github.com/acme/app.git", false, false},
		{"https://tok@github.com/acme/app.git", false, false},
		{"http://github.com/acme/app.git", false, false},
		{"ssh://git@github.com/acme/app.git", false, false},
		{"git@github.com:acme/app.git", false, false},
		{"git://github.com/acme/app.git", false, false},
		{"ext::sh -c touch% /tmp/pwned", false, false},
		{"ext::sh -c touch% /tmp/pwned", true, false},
		{"fd::3", true, false},
		{"--upload-pack=touch /tmp/pwned", false, false},
		{"-oProxyCommand=x", false, false},
		{"https://-oProxyCommand=x/", false, false},
		{"https://github.com/a\nb", false, false},
		{"file:///srv/repo.git", false, false},
		{"file:///srv/repo.git", true, true},
		{"/srv/repo.git", false, false},
		{"/srv/repo.git", true, true},
		{"", false, false},
	}
	for _, tt := range tests {
		var opts []Option
		if tt.local {
			opts = append(opts, AllowLocal())
		}
		err := ValidateURL(tt.give, opts...)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrURL)) {
			t.Errorf("ValidateURL(%q, local=%v) = %v, want ok=%v", tt.give, tt.local, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw@") {
			t.Errorf("ValidateURL error repeats the credential: %v", err)
		}
	}
}
