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
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/sandbox"
)

// HostileUnconfined, set to 1, runs a hostile suite with no sandbox, to
// show each attack succeeding there (the suite then fails).
const HostileUnconfined = "CLOPEN_HOSTILE_UNCONFINED"

// hostileModelPort is the model API's port inside every hostile sandbox.
const hostileModelPort = 18080

// HostileWorker is one worker's worth of agents for a hostile suite: an
// in-process fakellm and the worker's sandbox (bubblewrap), fakellm
// bridged in at one port; with HostileUnconfined=1 no sandbox and fakellm
// on a loopback port.
type HostileWorker struct {
	Root    string // holds the workspaces, the state and the model socket
	BaseURL string // fakellm as the agents reach it, plus path
	Sandbox *engine.Sandboxing
}

// NewHostileWorker starts fakellm; path ("/v1" or "") ends BaseURL.
func NewHostileWorker(t *testing.T, path string) *HostileWorker {
	t.Helper()
	NeedRoot(t)
	w := &HostileWorker{Root: t.TempDir()}
	srv := &http.Server{Handler: fakellm.New(fakellm.Config{}), ReadHeaderTimeout: 10 * time.Second}
	t.Cleanup(func() { _ = srv.Close() })
	network, addr := "unix", filepath.Join(w.Root, "model.sock")
	if os.Getenv(HostileUnconfined) == "1" {
		network, addr = "tcp", "127.0.0.1:0"
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	if network == "tcp" {
		w.BaseURL = "http://" + ln.Addr().String() + path
		return w
	}
	if err := os.Chmod(addr, 0o666); err != nil {
		t.Fatal(err)
	}
	w.BaseURL = fmt.Sprintf("http://127.0.0.1:%d%s", hostileModelPort, path)
	w.Sandbox = &engine.Sandboxing{Sandbox: &sandbox.Bwrap{}, Endpoints: func(string) ([]sandbox.Endpoint, error) {
		return []sandbox.Endpoint{{Port: hostileModelPort, Socket: addr}}, nil
	}}
	return w
}

// Workspace creates tenant's workspace, holding a .env with
// SECRET_OF_<tenant>.
func (w *HostileWorker) Workspace(t *testing.T, tenant string) string {
	t.Helper()
	ws := filepath.Join(w.Root, "ws", tenant)
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET_OF_"+tenant), 0o644); err != nil {
		t.Fatal(err)
	}
	return ws
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
	rec := NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	err := tn.Engine.Run(ctx, engine.Request{Tenant: tn.Name, RunID: uuid.NewString(), SessionID: uuid.NewString(),
		Workspace: tn.Workspace, Model: tn.Model, Interaction: rec,
		Prompt: []events.Block{events.TextBlock{Text: "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"}}}, rec.Emit)
	if err != nil {
		t.Fatalf("%s: turn running %q: %v", tn.Name, command, err)
	}
	out, _ := json.Marshal(rec.Outputs())
	if !strings.Contains(string(out), "Tool finished") {
		t.Fatalf("%s: the command %q never ran: %s", tn.Name, command, out)
	}
	return string(out)
}

// HostileAttacks makes b's agent attack a's after a has run a turn (so a's
// warm process holds mark, a string only a's environment has): reading a's
// workspace, reading a's environment through /proc, and connecting to a
// port on the host (NATS). Every attack must fail.
func HostileAttacks(t *testing.T, a, b HostileTenant, mark string) {
	t.Helper()
	a.Sh(t, "echo hello from a")
	for _, at := range []struct{ name, command, leak string }{
		{"read the other tenant's workspace", "cat " + filepath.Join(a.Workspace, ".env"), "SECRET_OF_" + a.Name},
		{"read another process's environment", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o '" +
			mark[:len(mark)-1] + "[" + mark[len(mark)-1:] + "]' | head -1", mark},
		{"connect to NATS", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN$((4000+222))'", "OPEN4222"},
	} {
		t.Run(at.name, func(t *testing.T) {
			if out := b.Sh(t, at.command); strings.Contains(out, at.leak) {
				t.Errorf("attack succeeded: %q gave %q", at.command, at.leak)
			}
		})
	}
}
