package enginetest

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
	"clopen.dev/services/engine-worker/internal/modelproxy"
	"clopen.dev/services/engine-worker/internal/sandbox"
)

// HostileUnconfined, set to 1, runs a hostile suite with no sandbox, to
// show each attack succeeding there (the suite then fails). The fork bomb
// and the memory hog are not run that way: they would hit the whole host.
const HostileUnconfined = "CLOPEN_HOSTILE_UNCONFINED"

// hostileModelPort is the model API's port inside every hostile sandbox.
const hostileModelPort = 18080

// hostileMasterKey is what the worker keeps that no agent may read.
const hostileMasterKey = "MASTERKEY-0123"

// HostileConfig shapes a hostile suite's worker.
type HostileConfig struct {
	// Path ends BaseURL: "/v1" or "".
	Path string
	// Proxied confines the agents as the worker does: each run reaches
	// fakellm, on the worker's loopback (which the operator allows),
	// through a model proxy holding its tenant's key, the agent only a
	// placeholder. Without it fakellm is bridged in at one port and each
	// agent holds its own key.
	Proxied bool
	// Limits bound each confined process. With a memory limit the suite
	// also runs a fork bomb and a memory hog.
	Limits sandbox.Limits
}

// HostileWorker is one worker's worth of agents for a hostile suite: an
// in-process fakellm, the worker's sandbox (bubblewrap) and a master key
// in its data dir; with HostileUnconfined=1 no sandbox and fakellm on a
// loopback port.
type HostileWorker struct {
	Root    string // holds the workspaces, the state, the data and the model socket
	BaseURL string // fakellm as the agents reach it, plus path
	Sandbox *engine.Sandboxing
	cfg     HostileConfig
	keys    sync.Map // the API keys fakellm was called with
}

// HostileKey is the provider key a hostile suite gives tenant's
// credentials.
func HostileKey(tenant string) string { return "sk-key-of-" + tenant }

// HostileGetenv is an environment for tenant's EnvCredentials holding
// only variable, set to HostileKey(tenant).
func HostileGetenv(tenant, variable string) func(string) string {
	return func(k string) string {
		if k == variable {
			return HostileKey(tenant)
		}
		return ""
	}
}

// NewHostileWorker starts fakellm and writes the worker's master key.
func NewHostileWorker(t *testing.T, cfg HostileConfig) *HostileWorker {
	t.Helper()
	NeedRoot(t)
	w := &HostileWorker{Root: t.TempDir(), cfg: cfg}
	data := filepath.Join(w.Root, "data")
	must(t, os.MkdirAll(data, 0o700))
	must(t, os.WriteFile(filepath.Join(data, "secret.key"), []byte(hostileMasterKey), 0o600))
	llm := fakellm.New(fakellm.Config{})
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		w.keys.Store(r.Header.Get("X-Api-Key"), true)
		w.keys.Store(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), true)
		llm.ServeHTTP(rw, r)
	})}
	t.Cleanup(func() { _ = srv.Close() })
	unconfined := os.Getenv(HostileUnconfined) == "1"
	network, addr := "unix", filepath.Join(w.Root, "model.sock")
	if unconfined || cfg.Proxied {
		network, addr = "tcp", "127.0.0.1:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	switch {
	case unconfined:
		w.BaseURL = "http://" + ln.Addr().String() + cfg.Path
	case cfg.Proxied:
		w.BaseURL = "http://" + ln.Addr().String() + cfg.Path
		proxies := &modelproxy.Pool{Dir: filepath.Join(w.Root, "run"), Options: modelproxy.Options{Allow: []string{"127.0.0.1"}}}
		must(t, os.MkdirAll(proxies.Dir, 0o700))
		t.Cleanup(proxies.Close)
		w.Sandbox = &engine.Sandboxing{Sandbox: &sandbox.Bwrap{}, Limits: cfg.Limits, Proxies: proxies}
	default:
		must(t, os.Chmod(addr, 0o666))
		w.BaseURL = fmt.Sprintf("http://127.0.0.1:%d%s", hostileModelPort, cfg.Path)
		w.Sandbox = &engine.Sandboxing{Sandbox: &sandbox.Bwrap{}, Limits: cfg.Limits, Endpoints: func(string) ([]sandbox.Endpoint, error) {
			return []sandbox.Endpoint{{Port: hostileModelPort, Socket: addr}}, nil
		}}
	}
	return w
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// StateDir is the engines' StateDir; their tenants' account is "acct".
func (w *HostileWorker) StateDir() string { return filepath.Join(w.Root, "state") }

// home is tenant's engine state dir.
func (w *HostileWorker) home(tenant string) string {
	return engine.StateDir(w.StateDir(), tenant, "acct")
}

// Workspace creates tenant's workspace, holding a .env with
// SECRET_OF_<tenant>.
func (w *HostileWorker) Workspace(t *testing.T, tenant string) string {
	t.Helper()
	ws := filepath.Join(w.Root, "ws", tenant)
	must(t, os.MkdirAll(ws, 0o755))
	must(t, os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET_OF_"+tenant), 0o644))
	return ws
}

// DisposeAtCleanup disposes of e when t ends, within 15 s; an error
// fails t.
func DisposeAtCleanup(t *testing.T, e engine.Disposer) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := e.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
}

// HostileTenant is one tenant's agent in a hostile suite.
type HostileTenant struct {
	Name, Workspace, Model string
	Engine                 engine.Engine
}

// Sh makes the tenant's agent run command through its shell tool
// (fakellm's @@SH@@) and returns everything the turn produced, as JSON.
func (tn HostileTenant) Sh(t *testing.T, command string) string {
	t.Helper()
	out, err := tn.Try(command)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Try is Sh for any goroutine: it returns what failed.
func (tn HostileTenant) Try(command string) (string, error) {
	rec := NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	err := tn.Engine.Run(ctx, engine.Request{Tenant: tn.Name, RunID: uuid.NewString(), SessionID: uuid.NewString(),
		Workspace: tn.Workspace, Model: tn.Model, Interaction: rec,
		Prompt: []events.Block{events.TextBlock{Text: "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"}}}, rec.Emit)
	if err != nil {
		return "", fmt.Errorf("%s: turn running %q: %w", tn.Name, command, err)
	}
	b, _ := json.Marshal(rec.Outputs())
	out := string(b)
	if !strings.Contains(out, "Tool finished") {
		return "", fmt.Errorf("%s: the command %q never ran: %s", tn.Name, command, out)
	}
	return out, nil
}

// HostileAttacks makes b's agent attack a's and the worker w after a has
// run a turn (so a's warm process holds mark, a string only a's
// environment has, and a's engine state a transcript): reading a's
// workspace and engine state, the worker's master key, a's environment
// through /proc; connecting to NATS, Postgres and another host; killing
// a's processes and writing into a's workspace. Proxied, b must not find
// its own key either, and the model server must get both tenants' real
// keys and no placeholder; with a memory limit a fork bomb and a memory
// hog must end only b's run. Every attack must fail. a and b are run by
// engines on w (StateDir, Sandbox, BaseURL), their credentials holding
// HostileKey of their tenant.
func HostileAttacks(t *testing.T, w *HostileWorker, a, b HostileTenant, mark string) {
	t.Helper()
	a.Sh(t, "echo hello from a")
	must(t, os.WriteFile(filepath.Join(w.home(a.Name), "transcript-of-a.jsonl"), []byte("TRANSCRIPT_OF_A"), 0o644))
	type attack struct{ name, command, leak string }
	attacks := []attack{
		{"read the other tenant's workspace", "cat " + filepath.Join(a.Workspace, ".env"), "SECRET_OF_" + a.Name},
		{"read the other tenant's engine state", "cat " + filepath.Join(w.home(a.Name), "transcript-of-a.jsonl"), "TRANSCRIPT_OF_A"},
		{"read the worker's master key", "cat " + filepath.Join(w.Root, "data", "secret.key"), hostileMasterKey},
		{"read another process's environment", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o '" + unmatched(mark) + "' | head -1", mark},
	}
	if key := HostileKey(a.Name); key != mark {
		// Proxied, a's key is not in its environment either.
		attacks = append(attacks, attack{"read another process's provider key",
			"cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o '" + unmatched(key) + "' | head -1", key})
	}
	if w.cfg.Proxied {
		// The agent's own environment and state hold no key of its
		// tenant's: the run's model proxy holds it.
		key := HostileKey(b.Name)
		attacks = append(attacks, attack{"read its own provider key",
			"env | grep -a -o '" + unmatched(key) + "' | head -1; grep -rao '" + unmatched(key) + "' $HOME 2>/dev/null | head -1", key})
	}
	// Killing comes last: unconfined, it ends a's processes.
	attacks = append(attacks,
		attack{"connect to NATS", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN$((4000+222))'", "OPEN4222"},
		attack{"connect to Postgres", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/5432 && echo OPEN$((5000+432))'", "OPEN5432"},
		attack{"connect to another host", "timeout 3 bash -c 'exec 3<>/dev/tcp/1.1.1.1/80 && echo OPEN$((40+40))'", "OPEN80"},
		attack{"kill the other tenant's processes", "for p in /proc/[0-9]*; do grep -qa '" + unmatched(mark) + "' $p/environ 2>/dev/null && kill -9 ${p#/proc/} && echo KILL$((1+1))ED; done; true", "KILL2ED"})
	for _, at := range attacks {
		t.Run(at.name, func(t *testing.T) {
			if out := b.Sh(t, at.command); strings.Contains(out, at.leak) {
				t.Errorf("attack succeeded: %q gave %q", at.command, at.leak)
			}
		})
	}
	t.Run("write into the other tenant's workspace", func(t *testing.T) {
		b.Sh(t, "echo pwned > "+filepath.Join(a.Workspace, "pwned.txt")+"; true")
		if _, err := os.Stat(filepath.Join(a.Workspace, "pwned.txt")); err == nil {
			t.Error("attack succeeded: B wrote into A's workspace")
		}
	})
	if w.Sandbox == nil {
		return // a fork bomb and a memory hog unconfined would take the host down
	}
	if w.cfg.Proxied {
		t.Run("turns reach the model with the real key, through the proxy", func(t *testing.T) {
			for _, k := range []string{HostileKey(a.Name), HostileKey(b.Name)} {
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
	if w.cfg.Limits.MemoryBytes > 0 {
		t.Run("fork bomb and memory hog end only the attacker's run", func(t *testing.T) { forkBombAndHog(t, a, b) })
	}
}

// unmatched is a grep pattern for s that does not match itself: a command
// line holding it (in /proc) is no leak.
func unmatched(s string) string { return s[:len(s)-1] + "[" + s[len(s)-1:] + "]" }

// forkBombAndHog makes b fork 5000 processes and allocate 2 GB while a
// runs a turn, which must complete.
func forkBombAndHog(t *testing.T, a, b HostileTenant) {
	var wg sync.WaitGroup
	var aOut string
	var aErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(time.Second)
		aOut, aErr = a.Try("sleep 2; echo A-$((1))-RUNS")
	}()
	defer wg.Wait()
	bomb, bombErr := b.Try(`python3 -c '
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
	hog, hogErr := b.Try(`python3 -c 'b = bytearray(2 << 30); print("ALLOC" + "ATED")' 2>&1 | tail -1`)
	wg.Wait()
	t.Logf("fork bomb: %v %s", bombErr, tail(bomb))
	t.Logf("memory hog: %v %s", hogErr, tail(hog))
	if aErr != nil {
		t.Fatalf("the other tenant's run failed: %v", aErr)
	}
	// The attacker's run may end (its agent cannot fork either) or report
	// how far the bomb got; it never forks all of it.
	if strings.Contains(bomb, "FORKCOUNT 5000") {
		t.Errorf("the fork bomb was not contained: %s", bomb)
	}
	if strings.Contains(hog, "ALLOCATED") {
		t.Errorf("the 2 GB allocation succeeded: %s", hog)
	}
	if !strings.Contains(aOut, "A-1-RUNS") {
		t.Errorf("the other tenant's run did not complete: %s", aOut)
	}
}

func tail(s string) string {
	if len(s) > 600 {
		return s[len(s)-600:]
	}
	return s
}
