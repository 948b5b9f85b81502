package claude_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/modelproxy"
	"clopen.dev/services/engine-worker/internal/sandbox"
)

// hostileUnconfined, set to 1, runs the hostile suite with no sandbox, to
// show each attack succeeding there (the suite then fails). The fork bomb
// and the memory hog are not run that way: they would hit the whole host.
const hostileUnconfined = "CLOPEN_HOSTILE_UNCONFINED"

// hostileWorker is one worker's worth of Claude Code instances: two tenants,
// one fakellm, one sandbox configuration.
type hostileWorker struct {
	root    string // holds the data dir, workspaces and state
	baseURL string
	sandbox *engine.Sandboxing
	keys    sync.Map // X-Api-Key values the model server got
}

func newHostileWorker(t *testing.T) *hostileWorker {
	t.Helper()
	enginetest.NeedRoot(t)
	w := &hostileWorker{root: t.TempDir()}
	llm := fakellm.New(fakellm.Config{})
	// The keys the model server was called with: the tenants' own, put in
	// by their model proxies.
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.keys.Store(r.Header.Get("X-Api-Key"), true)
		llm.ServeHTTP(rw, r)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	w.baseURL = "http://" + ln.Addr().String()
	if os.Getenv(hostileUnconfined) != "1" {
		// The model server is on the worker's loopback, as in `clopen dev
		// --fakellm`: the operator allows it.
		proxies := &modelproxy.Pool{Dir: filepath.Join(w.root, "run"), Options: modelproxy.Options{Allow: []string{"127.0.0.1"}}}
		must(t, os.MkdirAll(proxies.Dir, 0o700))
		t.Cleanup(proxies.Close)
		w.sandbox = &engine.Sandboxing{Sandbox: &sandbox.Bwrap{},
			Limits:  sandbox.Limits{MemoryBytes: 1536 << 20, Procs: 512, CPUSeconds: 300},
			Proxies: proxies}
	}
	t.Cleanup(func() { _ = srv.Close() })
	// What the worker keeps that no agent may read.
	data := filepath.Join(w.root, "data")
	must(t, os.MkdirAll(data, 0o700))
	must(t, os.WriteFile(filepath.Join(data, "secret.key"), []byte("MASTERKEY-0123"), 0o600))
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// tenant is one tenant's Claude Code instance and workspace.
type tenant struct {
	name, workspace, state string
	eng                    *claude.Engine
}

func (w *hostileWorker) tenant(t *testing.T, name string) *tenant {
	t.Helper()
	state := filepath.Join(w.root, "state")
	tn := &tenant{name: name, workspace: filepath.Join(w.root, "ws", name), state: state}
	must(t, os.MkdirAll(tn.workspace, 0o755))
	must(t, os.WriteFile(filepath.Join(tn.workspace, ".env"), []byte("SECRET_OF_"+name), 0o644))
	tn.eng = claude.New(claude.Config{Process: engine.Process{Bin: enginetest.InstalledBin(t, events.EngineClaudeCode), StateDir: state, KillGrace: time.Second, Sandbox: w.sandbox}, Credentials: claude.EnvCredentials{BaseURL: w.baseURL, Getenv: func(k string) string {
		if k == "ANTHROPIC_API_KEY" {
			return "sk-key-of-" + name
		}
		return ""
	}}, Env: []string{"ENABLE_TOOL_SEARCH=false"}},
		engine.Key{Engine: events.EngineClaudeCode, Tenant: name, Account: "acct"})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = tn.eng.Dispose(ctx)
	})
	return tn
}

// home is the tenant's engine state dir (HOME of its CLI).
func (tn *tenant) home() string { return engine.StateDir(tn.state, tn.name, "acct") }

// sh makes the tenant's agent run command through its Bash tool and returns
// everything the turn produced, as JSON.
func (tn *tenant) sh(t *testing.T, command string) string {
	t.Helper()
	out, err := tn.try(command)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// try is sh for any goroutine: it returns what failed.
func (tn *tenant) try(command string) (string, error) {
	rec := enginetest.NewRecorder()
	prompt := "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	err := tn.eng.Run(ctx, engine.Request{Tenant: tn.name, RunID: uuid.NewString(), SessionID: uuid.NewString(),
		Workspace: tn.workspace, Prompt: []events.Block{events.TextBlock{Text: prompt}}, Model: claude.DefaultModel,
		Interaction: rec}, rec.Emit)
	if err != nil {
		return "", fmt.Errorf("%s: turn running %q: %w", tn.name, command, err)
	}
	b, _ := json.Marshal(rec.Outputs())
	out := string(b)
	if !strings.Contains(out, "Tool finished") {
		return "", fmt.Errorf("%s: the command %q never ran: %s", tn.name, command, out)
	}
	return out, nil
}

// TestHostileAgent makes tenant B's real Claude Code attack tenant A and
// the worker on one worker; every attack must fail.
func TestHostileAgent(t *testing.T) {
	w := newHostileWorker(t)
	a, b := w.tenant(t, "tenant-a"), w.tenant(t, "tenant-b")
	// A has run a turn: its state holds a transcript, and its warm process
	// holds its key in its environment.
	a.sh(t, "echo hello from a")
	must(t, os.WriteFile(filepath.Join(a.home(), "transcript-of-a.jsonl"), []byte("TRANSCRIPT_OF_A"), 0o644))
	confined := w.sandbox != nil

	attacks := []struct {
		name, command, leak string
	}{
		{"read the other tenant's workspace", "cat " + filepath.Join(a.workspace, ".env"), "SECRET_OF_tenant-a"},
		{"read the other tenant's engine state", "cat " + filepath.Join(a.home(), "transcript-of-a.jsonl"), "TRANSCRIPT_OF_A"},
		{"read the worker's master key", "cat " + filepath.Join(w.root, "data", "secret.key"), "MASTERKEY-0123"},
		// The agent's own environment holds no key of its tenant's: the
		// run's model-API proxy holds it, the agent only a placeholder.
		{"read its own provider key", "env | grep -a -o 'sk-key-of-tenant-[b]' | head -1", "sk-key-of-tenant-b"},
		{"read another process's environment", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o 'sk-key-of-tenant-[a]' | head -1", "sk-key-of-tenant-a"},
		{"connect to NATS", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN$((4000+222))'", "OPEN4222"},
		{"connect to Postgres", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432 && echo OPEN$((5000+432))'", "OPEN5432"},
		{"connect to another host", "timeout 3 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80 && echo OPEN$((40+40))'", "OPEN80"},
		{"kill the other tenant's processes", "for p in /proc/[0-9]*; do grep -qa sk-key-of-tenant-[a] $p/environ 2>/dev/null && kill -9 ${p#/proc/} && echo KILL$((1+1))ED; done; true", "KILL2ED"},
	}
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			if out := b.sh(t, at.command); strings.Contains(out, at.leak) {
				t.Errorf("attack succeeded: %q gave %q", at.command, at.leak)
			}
		})
	}
	t.Run("write into the other tenant's workspace", func(t *testing.T) {
		b.sh(t, "echo pwned > "+filepath.Join(a.workspace, "pwned.txt")+"; true")
		if _, err := os.Stat(filepath.Join(a.workspace, "pwned.txt")); err == nil {
			t.Error("attack succeeded: B wrote into A's workspace")
		}
	})
	if confined {
		t.Run("turns reach the model with the real key, through the proxy", func(t *testing.T) {
			for _, k := range []string{"sk-key-of-tenant-a", "sk-key-of-tenant-b"} {
				if _, ok := w.keys.Load(k); !ok {
					t.Errorf("the model server never got %s", k)
				}
			}
			w.keys.Range(func(k, _ any) bool {
				if strings.HasPrefix(k.(string), modelproxy.TokenPrefix) {
					t.Errorf("a placeholder reached the model server: %s", k)
				}
				return true
			})
		})
	}
	if !confined {
		return // a fork bomb and a memory hog unconfined would take the host down
	}
	t.Run("fork bomb and memory hog end only the attacker's run", func(t *testing.T) {
		var wg sync.WaitGroup
		var aOut string
		var aErr error
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Second)
			aOut, aErr = a.try("sleep 2; echo A-$((1))-RUNS")
		}()
		defer wg.Wait()
		bomb, bombErr := b.try(`python3 -c '
import os, time
n = 0
for i in range(5000):
    try:
        if os.fork() == 0:
            time.sleep(20); os._exit(0)
        n += 1
    except OSError:
        pass
print("FORK" + "COUNT", n)
'`)
		hog, hogErr := b.try(`python3 -c 'b = bytearray(2 << 30); print("ALLOC" + "ATED")' 2>&1 | tail -1`)
		wg.Wait()
		t.Logf("fork bomb: %v %s", bombErr, tail(bomb))
		t.Logf("memory hog: %v %s", hogErr, tail(hog))
		if aErr != nil {
			t.Fatalf("the other tenant's run failed: %v", aErr)
		}
		// The attacker's run may end (its agent cannot fork either) or
		// report how far the bomb got; it never forks all of it.
		if strings.Contains(bomb, "FORKCOUNT 5000") {
			t.Errorf("the fork bomb was not contained: %s", bomb)
		}
		if strings.Contains(hog, "ALLOCATED") {
			t.Errorf("the 2 GB allocation succeeded: %s", hog)
		}
		if !strings.Contains(aOut, "A-1-RUNS") {
			t.Errorf("the other tenant's run did not complete: %s", aOut)
		}
	})
}

func tail(s string) string {
	if len(s) > 600 {
		return s[len(s)-600:]
	}
	return s
}
