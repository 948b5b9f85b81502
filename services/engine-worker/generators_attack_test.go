package worker

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
)

// An agent can write its workspace's .git/config, and a generator that ran
// git there ran whatever core.fsmonitor or a clean filter names, on the
// worker host. The generators read the session's snapshots instead: the
// hostile repository, in the project's workspace and in the session's, is
// never run.
func TestGeneratorsRunNoAgentGitConfig(t *testing.T) {
	e := newEngineEnv(t)
	tA, project, session := uuid.NewString(), uuid.NewString(), uuid.NewString()
	marker := filepath.Join(t.TempDir(), "pwned")
	hostile := func(dir string) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "-C", dir, "init", "-q").CombinedOutput(); err != nil {
			t.Fatalf("git init: %v: %s", err, out)
		}
		hook := filepath.Join(dir, "hook.sh")
		if err := os.WriteFile(hook, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		cfg, err := os.OpenFile(filepath.Join(dir, ".git", "config"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = cfg.WriteString("[core]\n\tfsmonitor = " + hook + "\n[filter \"x\"]\n\tclean = " + hook + "\n")
		cfg.Close()
		if err := os.WriteFile(filepath.Join(dir, ".gitattributes"), []byte("* filter=x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	hostile(filepath.Join(e.w.cfg.Workspaces, tA, project))
	ws := filepath.Join(e.w.cfg.Workspaces, tA, project, "sessions", session)
	hostile(ws)
	head := e.captureWorkspace(t, tA, ws, nil, map[string]string{"a.txt": "hello\n"})

	for gen, answer := range map[string]string{events.GenerateCommitMessage: `{"message":"Add a"}`, events.GenerateBranchName: `{"name":"add-a"}`} {
		e.codex.Text = answer
		_, err := e.generate(t, events.GenerateRequest{Caller: caller(tA), Engine: events.EngineCodex, ProjectID: project,
			SessionID: session, To: head.ID, Generator: gen})
		if err != nil {
			t.Fatalf("%s: %v", gen, err)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("%s ran the workspace's core.fsmonitor command on the worker host", gen)
		}
	}
	if prompt := e.codex.Requests()[0].PromptText(); !strings.Contains(prompt, "added a.txt (+1 -0)") {
		t.Errorf("prompt = %q, want the session's changes", prompt)
	}
}
