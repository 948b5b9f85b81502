package source

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// askpass is the helper git runs for a username or password; it prints
// the one git asks for from the environment of the git process.
const askpass = `#!/bin/sh
case "$1" in
Username*) printf '%s\n' "$CLOPEN_GIT_USERNAME" ;;
*) printf '%s\n' "$CLOPEN_GIT_TOKEN" ;;
esac
`

// git runs the git binary with a private, empty home and the policy's
// configuration; secret is redacted from everything it reports.
type git struct {
	home   string
	env    []string
	config []string
	secret string
}

func newGit(o options, cred *Credential) (*git, error) {
	home, err := os.MkdirTemp("", "clopen-git-*")
	if err != nil {
		return nil, err
	}
	g := &git{home: home}
	g.env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_PROTOCOL_FROM_USER=0",
		"LC_ALL=C",
	}
	g.config = []string{
		"protocol.allow=never",
		"protocol.https.allow=always",
		"protocol.ext.allow=never",
		"protocol.fd.allow=never",
		"core.hooksPath=/dev/null",
		"core.fsmonitor=false",
		"credential.helper=",
		"submodule.recurse=false",
		"commit.gpgsign=false",
		"http.followRedirects=false",
	}
	if o.allowLocal {
		g.config = append(g.config, "protocol.file.allow=always")
	}
	if o.caFile != "" {
		g.config = append(g.config, "http.sslCAInfo="+o.caFile)
	}
	if cred != nil {
		if strings.ContainsAny(cred.Username+cred.Token, "\r\n\x00") {
			g.close()
			return nil, errors.New("credential contains a line break or NUL")
		}
		script := home + "/askpass"
		if err := os.WriteFile(script, []byte(askpass), 0o700); err != nil {
			g.close()
			return nil, err
		}
		g.secret = cred.Token
		g.env = append(g.env, "GIT_ASKPASS="+script,
			"CLOPEN_GIT_USERNAME="+cred.Username, "CLOPEN_GIT_TOKEN="+cred.Token)
	}
	return g, nil
}

func (g *git) close() { os.RemoveAll(g.home) }

// run runs git in dir ("" for the current directory) and returns its
// standard output; a failure carries a classified, redacted stderr.
func (g *git) run(ctx context.Context, dir string, args ...string) (string, error) {
	out, _, err := g.exec(ctx, dir, args)
	return out, err
}

// runBoth is run that returns stdout and the "remote:" lines of stderr.
func (g *git) runBoth(ctx context.Context, dir string, args ...string) (string, error) {
	out, stderr, err := g.exec(ctx, dir, args)
	var remote []string
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "remote:") {
			remote = append(remote, sc.Text())
		}
	}
	return strings.TrimSpace(strings.Join(append(remote, out), "\n")), err
}

func (g *git) exec(ctx context.Context, dir string, args []string) (stdout, stderr string, err error) {
	full := make([]string, 0, 2*len(g.config)+len(args))
	for _, c := range g.config {
		full = append(full, "-c", c)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Dir = dir
	cmd.Env = g.env
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	runErr := cmd.Run()
	stdout, stderr = g.redact(o.String()), g.redact(e.String())
	if runErr != nil {
		if ctx.Err() != nil {
			return stdout, stderr, fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		return stdout, stderr, classify(args[0], stderr, runErr)
	}
	return stdout, stderr, nil
}

func (g *git) redact(s string) string {
	if g.secret == "" {
		return s
	}
	return strings.ReplaceAll(s, g.secret, "[REDACTED]")
}

// classify turns git's stderr into one of the errors callers match on.
func classify(op, stderr string, err error) error {
	msg := lastLines(stderr, 3)
	low := strings.ToLower(stderr)
	var kind error
	switch {
	case strings.Contains(low, "authentication failed"), strings.Contains(low, "could not read username"),
		strings.Contains(low, "could not read password"), strings.Contains(low, "returned error: 401"),
		strings.Contains(low, "returned error: 403"), strings.Contains(low, "permission denied"):
		kind = ErrAuth
	case strings.Contains(low, "remote branch") && strings.Contains(low, "not found"):
		kind = ErrBranchNotFound
	case strings.Contains(low, "not found"), strings.Contains(low, "does not appear to be a git repository"),
		strings.Contains(low, "not a git repository"), strings.Contains(low, "returned error: 404"),
		strings.Contains(low, "fatal: repository '") && strings.Contains(low, "' does not exist"):
		kind = ErrNotRepository
	}
	if kind == nil {
		return fmt.Errorf("git %s: %w: %s", op, err, msg)
	}
	return fmt.Errorf("git %s: %w: %s", op, kind, msg)
}

// lastLines keeps git's last n lines of stderr, without progress lines.
func lastLines(s string, n int) string {
	var lines []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(l, "Cloning into") {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// configKeys lists the keys a git config file sets, lower-cased as
// section.[subsection.]name, without running git on it.
func configKeys(text string) ([]string, error) {
	var keys []string
	section := ""
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				return nil, errors.New("repository config: malformed section")
			}
			head := strings.TrimSpace(line[1:end])
			name, sub, ok := strings.Cut(head, " ")
			section = strings.ToLower(name)
			if ok {
				section += "." + strings.Trim(strings.TrimSpace(sub), `"`)
			}
			if rest := strings.TrimSpace(line[end+1:]); rest != "" && rest[0] != '#' && rest[0] != ';' {
				line = rest
			} else {
				continue
			}
		}
		if section == "" {
			return nil, errors.New("repository config: key outside a section")
		}
		name, _, _ := strings.Cut(line, "=")
		keys = append(keys, section+"."+strings.ToLower(strings.TrimSpace(name)))
	}
	return keys, nil
}
