package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Repo names a remote repository and how to reach it.
type Repo struct {
	URL string
	// Branch is the branch to clone; empty is the remote's default.
	Branch string
	// Credential authenticates over https; nil for a public repository.
	Credential *Credential
}

// Credential is an https username and token (or password), sent as basic
// auth. SSH keys are not supported: https with a token covers the hosted
// forges, and keeps every remote on one transport.
type Credential struct {
	Username, Token string
}

// Author is who a pushed commit is attributed to.
type Author struct {
	Name, Email string
}

// PushResult is what Push committed and what the remote answered.
type PushResult struct {
	Commit, Branch string
	// Remote is the remote's answer: git's porcelain status lines and any
	// "remote:" messages, with the credential redacted.
	Remote string
}

// The failures callers tell apart; Clone and Push wrap one of them when
// git's answer says which it is.
var (
	ErrAuth           = errors.New("authentication failed")
	ErrBranchNotFound = errors.New("branch not found")
	ErrNotRepository  = errors.New("not a repository")
)

// Clone makes a shallow (depth 1), single-branch clone of repo into dir,
// which must not exist or be empty, and returns the commit it checked out.
// Submodules are not fetched and no hook runs. The clone's .git/config
// holds the URL as given, which ValidateURL guarantees carries no
// credential.
func Clone(ctx context.Context, repo Repo, dir string, opts ...Option) (head string, err error) {
	o := collect(opts)
	if err := ValidateURL(repo.URL, opts...); err != nil {
		return "", err
	}
	if repo.Branch != "" {
		if err := validBranch(repo.Branch); err != nil {
			return "", fmt.Errorf("clone: %w", err)
		}
	}
	if names, err := os.ReadDir(dir); err == nil && len(names) > 0 {
		return "", fmt.Errorf("clone: %s is not empty", dir)
	}
	g, err := newGit(o, repo.Credential)
	if err != nil {
		return "", fmt.Errorf("clone: %w", err)
	}
	defer g.close()
	args := []string{"clone", "--depth", "1", "--single-branch", "--no-tags", "--no-recurse-submodules"}
	if strings.HasPrefix(repo.URL, "/") {
		// A local clone would ignore --depth and hard-link objects.
		args = append(args, "--no-local")
	}
	if repo.Branch != "" {
		args = append(args, "--branch", repo.Branch)
	}
	args = append(args, "--", repo.URL, dir)
	if _, err := g.run(ctx, "", args...); err != nil {
		return "", fmt.Errorf("clone: %w", err)
	}
	out, err := g.run(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return "", fmt.Errorf("clone: the remote has no commits: %w", err)
	}
	return strings.TrimSpace(out), nil
}

// Push commits every change in the working tree at dir onto branch, made
// (or reset) at the current HEAD, and pushes that branch to repo.URL with
// the credential. With nothing to commit it pushes HEAD as it is. It
// refuses a dir whose .git is not a plain repository or whose
// configuration could make git run a program (see checkRepo), since a
// session's workspace is the tenant's to edit.
func Push(ctx context.Context, repo Repo, dir, branch, message string, author Author, opts ...Option) (PushResult, error) {
	o := collect(opts)
	if err := ValidateURL(repo.URL, opts...); err != nil {
		return PushResult{}, err
	}
	if err := validBranch(branch); err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	if strings.TrimSpace(message) == "" {
		return PushResult{}, errors.New("push: empty commit message")
	}
	if author.Name == "" || author.Email == "" {
		return PushResult{}, errors.New("push: author needs a name and an email")
	}
	if err := checkRepo(dir); err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	g, err := newGit(o, repo.Credential)
	if err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	defer g.close()
	g.env = append(g.env,
		"GIT_AUTHOR_NAME="+author.Name, "GIT_AUTHOR_EMAIL="+author.Email,
		"GIT_COMMITTER_NAME="+author.Name, "GIT_COMMITTER_EMAIL="+author.Email)
	steps := [][]string{
		{"checkout", "-B", branch},
		{"add", "--all"},
	}
	for _, s := range steps {
		if _, err := g.run(ctx, dir, s...); err != nil {
			return PushResult{}, fmt.Errorf("push: %s: %w", s[0], err)
		}
	}
	if _, err := g.run(ctx, dir, "diff", "--cached", "--quiet"); err != nil {
		if _, err := g.run(ctx, dir, "commit", "--no-verify", "--quiet", "-m", message); err != nil {
			return PushResult{}, fmt.Errorf("push: commit: %w", err)
		}
	}
	sha, err := g.run(ctx, dir, "rev-parse", "--verify", "HEAD")
	if err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	ref := "refs/heads/" + branch
	out, err := g.runBoth(ctx, dir, "push", "--porcelain", "--no-verify", "--", repo.URL, ref+":"+ref)
	if err != nil {
		return PushResult{}, fmt.Errorf("push: %w", err)
	}
	return PushResult{Commit: strings.TrimSpace(sha), Branch: branch, Remote: strings.TrimSpace(out)}, nil
}

// safeConfig lists the repository settings Push accepts in a workspace's
// .git/config: none of them makes git run a program or read another file.
var safeConfig = []string{
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
	"core.ignorecase", "core.precomposeunicode", "core.symlinks",
	"remote.origin.url", "remote.origin.fetch", "remote.origin.tagopt", "remote.origin.promisor", "remote.origin.partialclonefilter",
	"user.name", "user.email",
}

// checkRepo refuses a workspace whose repository could run code or reach
// outside it: .git must be a directory, with no alternates, and its config
// may hold only safeConfig keys and branch tracking.
func checkRepo(dir string) error {
	gitDir := filepath.Join(dir, ".git")
	fi, err := os.Lstat(gitDir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %s has no .git directory", ErrNotRepository, dir)
	}
	for _, f := range []string{"objects/info/alternates", "commondir"} {
		if _, err := os.Lstat(filepath.Join(gitDir, f)); err == nil {
			return fmt.Errorf("repository has %s, which is not allowed", f)
		}
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "config"))
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotRepository, err)
	}
	keys, err := configKeys(string(b))
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !allowedKey(k) {
			return fmt.Errorf("repository config sets %s, which is not allowed", k)
		}
	}
	return nil
}

func allowedKey(k string) bool {
	for _, s := range safeConfig {
		if k == s {
			return true
		}
	}
	if rest, ok := strings.CutPrefix(k, "branch."); ok {
		return strings.HasSuffix(rest, ".remote") || strings.HasSuffix(rest, ".merge")
	}
	return false
}
