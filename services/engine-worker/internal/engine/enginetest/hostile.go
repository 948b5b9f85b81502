package enginetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/modelproxy"
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
