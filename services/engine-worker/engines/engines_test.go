package engines

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/services/engine-worker/internal/engine"
)

// fakeSpec is an engine whose "executable" is a script printing version.
func fakeSpec(account error) Spec {
	return Spec{Type: events.EngineCodex, Pin: engine.Pin{Version: "1.2.3", VersionArgs: []string{"--version"}, Bin: "bin/agent",
		Packages: []Package{{Name: "agent", Version: "1.2.3"}}},
		Account: func(context.Context, Setup) error { return account },
		Factory: func(string, Setup) engine.Factory { return nil }}
}

func installFake(t *testing.T, root, version string) {
	t.Helper()
	s := fakeSpec(nil)
	s.Version = version // installs land in their version's dir
	writeAgent(t, root, s, "echo "+version+" '(Agent)'")
}

func TestCheck(t *testing.T) {
	noAccount := &engine.Error{Kind: events.KindNeedsAccount, Msg: "codex has no account: set X"}
	tests := []struct {
		name      string
		installed string // "" for none
		account   error
		want      State
		wantMsg   string
	}{
		{"nothing installed", "", nil, NotInstalled, "run `clopen engines install codex`"},
		{"an older version", "1.2.0", nil, NeedsUpdate, "codex 1.2.0 is installed, 1.2.3 is required: run `clopen engines install codex`"},
		{"no account", "1.2.3", noAccount, NeedsAccount, "codex has no account: set X; or run `clopen dev --fakellm`"},
		{"ready", "1.2.3", nil, Ready, "codex 1.2.3 is ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if tt.installed != "" {
				installFake(t, root, tt.installed)
			}
			st := fakeSpec(tt.account).Check(context.Background(), Setup{EnginesDir: root})
			if st.State != tt.want || !strings.Contains(st.Message, tt.wantMsg) || st.Required != "1.2.3" || st.Installed != tt.installed {
				t.Errorf("Check = %+v, want state %s, installed %q, message containing %q", st, tt.want, tt.installed, tt.wantMsg)
			}
		})
	}
}

func TestInstallIsIdempotent(t *testing.T) {
	root := t.TempDir()
	installFake(t, root, "1.2.3")
	var out bytes.Buffer
	already, err := fakeSpec(nil).Install(context.Background(), root, t.TempDir(), &out)
	if err != nil || !already || out.Len() != 0 {
		t.Errorf("Install over the pinned version = %v, %v, output %q; want already, silently", already, err, out.String())
	}
}

func TestTable(t *testing.T) {
	s, ok := Lookup(events.EngineClaudeCode)
	if !ok || s.Version != ClaudeCodeVersion || len(s.Packages) != 1 || s.Packages[0].Version != ClaudeCodeVersion {
		t.Fatalf("claude-code row = %+v, want the pinned native package", s)
	}
	if got := s.Dir("/e"); got != "/e/claude-code/"+ClaudeCodeVersion {
		t.Errorf("Dir = %s", got)
	}
	for _, s := range All() {
		if s.Factory == nil || (s.Bin == "") == (s.External == nil) || s.Version == "" {
			t.Errorf("row %s is incomplete", s.Type)
		}
	}
	// Without credentials Claude Code needs an account; a base URL is enough.
	var ee *engine.Error
	if err := s.Account(context.Background(), Setup{}); !errors.As(err, &ee) || ee.Kind != events.KindNeedsAccount {
		t.Errorf("Account without credentials = %v, want needs_account", err)
	}
	if err := s.Account(context.Background(), Setup{LLMBaseURL: "http://127.0.0.1:1"}); err != nil {
		t.Errorf("Account with a base URL = %v, want nil", err)
	}
}

func TestAvailableOffersOnlyReadyEngines(t *testing.T) {
	f, statuses := Available(context.Background(), Setup{EnginesDir: t.TempDir()})
	if len(f) != 0 || len(statuses) != len(All()) || statuses[0].State != NotInstalled {
		t.Errorf("Available with nothing installed = %v, %+v; want no factories", f, statuses)
	}
}

func TestVersionIn(t *testing.T) {
	tests := []struct{ give, want string }{
		{"2.1.332 (Claude Code)\n", "2.1.332"},
		{"codex-cli 0.171.0\n", "0.171.0"},
		{"0.73.1\n", "0.73.1"},
		{"GitHub Copilot CLI 1.0.102.\n", "1.0.102"},
		{"WARNING: something\ncodex-cli 0.171.0", "0.171.0"},
		{"no version here", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := versionIn(tt.give); got != tt.want {
			t.Errorf("versionIn(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

// Without a working sandbox no agent engine is offered, even one that is
// installed and ready, and nothing is left pending: agents never run
// unconfined unless the operator opts out.
func TestNoSandboxOffersNoAgent(t *testing.T) {
	root := t.TempDir()
	s := fakeSpec(nil)
	writeAgent(t, root, s, "echo 1.2.3 '(Agent)'")
	setup := Setup{EnginesDir: root, ProbeTimeout: 2 * time.Second, Logger: logging.Discard()}
	if f, _, _ := offerOf(context.Background(), setup, []Spec{s}); len(f) != 1 {
		t.Fatalf("with a sandbox, offered %d engines, want the ready one", len(f))
	}
	if _, err := Sandboxing(context.Background(), func(k string) string {
		if k == EnvSandbox {
			return "nsjail"
		}
		return ""
	}, t.TempDir(), nil); err == nil || errors.Is(err, ErrNoSandbox) {
		t.Fatalf("an unknown sandbox = %v, want a configuration error", err)
	}
	setup.NoSandbox = ErrNoSandbox
	f, v, p := Offer(context.Background(), setup)
	if len(f) != 0 || len(v) != 0 || p != nil {
		t.Fatalf("without a sandbox Offer = %v, %v, %v; want nothing", f, v, p)
	}
}

// An install says how far it has got while npm works, and stops saying so
// once the install has returned. The npm here is a script that takes a second to put
// the agent in place.
func TestInstallReportsProgress(t *testing.T) {
	bin := t.TempDir()
	npm := `#!/bin/sh
while [ "$1" != "--prefix" ]; do shift; done
mkdir -p "$2/bin" && head -c 300000 /dev/zero > "$2/blob"
printf '#!/bin/sh\necho 1.2.3\n' > "$2/bin/agent" && chmod +x "$2/bin/agent"
sleep 1
echo "added 1 package"
`
	if err := os.WriteFile(filepath.Join(bin, "npm"), []byte(npm), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 200 * time.Millisecond

	var out bytes.Buffer
	root := t.TempDir()
	if _, err := fakeSpec(nil).Install(context.Background(), root, t.TempDir(), &out); err != nil {
		t.Fatalf("Install: %v\n%s", err, out.String())
	}
	got := out.String()
	if !strings.Contains(got, "installing codex: 0.3 MB in place after") {
		t.Errorf("no progress line with the bytes in place in:\n%s", got)
	}
	time.Sleep(3 * progressEvery)
	if out.String() != got {
		t.Errorf("progress reported after the install returned:\n%s", out.String())
	}
	if v, err := fakeSpec(nil).InstalledVersion(context.Background(), root); err != nil || v != "1.2.3" {
		t.Errorf("installed version = %q, %v", v, err)
	}
}
