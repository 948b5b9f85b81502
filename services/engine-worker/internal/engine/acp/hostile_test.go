package acp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
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
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/sandbox"
)

// TestHostileQwen makes tenant B's real Qwen Code (an ACP agent) attack
// tenant A on one worker through its shell tool; every attack must fail.
// CLOPEN_HOSTILE_UNCONFINED=1 runs it with no sandbox, where they succeed.
func TestHostileQwen(t *testing.T) {
	enginetest.NeedRoot(t)
	bin := enginetest.InstalledBin(t, acp.Qwen.Type)
	root := t.TempDir()
	srv := &http.Server{Handler: fakellm.New(fakellm.Config{}), ReadHeaderTimeout: 10 * time.Second}
	t.Cleanup(func() { _ = srv.Close() })
	var sb *engine.Sandboxing
	var baseURL string
	if os.Getenv("CLOPEN_HOSTILE_UNCONFINED") == "1" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		baseURL = "http://" + ln.Addr().String() + "/v1"
	} else {
		sock := filepath.Join(root, "model.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _ = srv.Serve(ln) }()
		if err := os.Chmod(sock, 0o666); err != nil {
			t.Fatal(err)
		}
		baseURL = "http://127.0.0.1:18080/v1"
		sb = &engine.Sandboxing{Sandbox: &sandbox.Bwrap{}, Endpoints: func(string) ([]sandbox.Endpoint, error) {
			return []sandbox.Endpoint{{Port: 18080, Socket: sock}}, nil
		}}
	}
	newTenant := func(name string) (*acp.Engine, string) {
		ws := filepath.Join(root, "ws", name)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET_OF_"+name), 0o644); err != nil {
			t.Fatal(err)
		}
		e := acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: filepath.Join(root, "state"), KillGrace: time.Second, Sandbox: sb}, Profile: &acp.Qwen, DefaultModel: "fake-model", Credentials: acp.EnvCredentials{Profile: &acp.Qwen, BaseURL: baseURL}, Env: []string{"CLOPEN_MARK=mark-of-" + name}},
			engine.Key{Engine: acp.Qwen.Type, Tenant: name, Account: "acct"})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			defer cancel()
			_ = e.Dispose(ctx)
		})
		return e, ws
	}
	a, aws := newTenant("tenant-a")
	b, bws := newTenant("tenant-b")
	sh := func(t *testing.T, e *acp.Engine, ws, name, command string) string {
		t.Helper()
		rec := enginetest.NewRecorder()
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
		defer cancel()
		err := e.Run(ctx, engine.Request{Tenant: name, RunID: uuid.NewString(), SessionID: uuid.NewString(), Workspace: ws,
			Prompt: []events.Block{events.TextBlock{Text: "@@SH:" + base64.RawURLEncoding.EncodeToString([]byte(command)) + "@@"}},
			Model:  "fake-model", Interaction: rec}, rec.Emit)
		if err != nil {
			t.Fatalf("%s: turn running %q: %v", name, command, err)
		}
		out, _ := json.Marshal(rec.Outputs())
		if !strings.Contains(string(out), "Tool finished") {
			t.Fatalf("%s: the command %q never ran: %s", name, command, out)
		}
		return string(out)
	}
	sh(t, a, aws, "tenant-a", "echo hello from a") // A's warm process now holds its mark
	for _, at := range []struct{ name, command, leak string }{
		{"read the other tenant's workspace", "cat " + filepath.Join(aws, ".env"), "SECRET_OF_tenant-a"},
		{"read another process's environment", "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -a -o 'mark-of-tenant-[a]' | head -1", "mark-of-tenant-a"},
		{"connect to NATS", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN$((4000+222))'", "OPEN4222"},
	} {
		t.Run(at.name, func(t *testing.T) {
			if out := sh(t, b, bws, "tenant-b", at.command); strings.Contains(out, at.leak) {
				t.Errorf("attack succeeded: %q gave %q", at.command, at.leak)
			}
		})
	}
}
