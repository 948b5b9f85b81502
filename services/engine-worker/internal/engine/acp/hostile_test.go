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
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/modelproxy"
	"clopen.dev/services/engine-worker/internal/sandbox"
)

// TestHostileQwen makes tenant B's real Qwen Code (an ACP agent) attack
// tenant A on one worker through its shell tool; every attack must fail.
// CLOPEN_HOSTILE_UNCONFINED=1 runs it with no sandbox, where they succeed.
func TestHostileQwen(t *testing.T) {
	enginetest.NeedRoot(t)
	bin := enginetest.InstalledBin(t, acp.Qwen.Type)
	root := t.TempDir()
	llm := fakellm.New(fakellm.Config{})
	var keys sync.Map // the keys the model server was called with
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		keys.Store(strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), true)
		llm.ServeHTTP(w, r)
	})}
	t.Cleanup(func() { _ = srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	baseURL := "http://" + ln.Addr().String() + "/v1"
	var sb *engine.Sandboxing
	if os.Getenv("CLOPEN_HOSTILE_UNCONFINED") != "1" {
		// The model server is on the worker's loopback; the operator
		// allows it. Each tenant's key stays in its model proxy.
		proxies := &modelproxy.Pool{Dir: filepath.Join(root, "run"), Options: modelproxy.Options{Allow: []string{"127.0.0.1"}}}
		if err := os.MkdirAll(proxies.Dir, 0o700); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(proxies.Close)
		sb = &engine.Sandboxing{Sandbox: &sandbox.Bwrap{}, Proxies: proxies}
	}
	newTenant := func(name string) (*acp.Engine, string) {
		ws := filepath.Join(root, "ws", name)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, ".env"), []byte("SECRET_OF_"+name), 0o644); err != nil {
			t.Fatal(err)
		}
		e := acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: filepath.Join(root, "state"), KillGrace: time.Second, Sandbox: sb},
			Profile: &acp.Qwen, DefaultModel: "fake-model",
			Credentials: acp.EnvCredentials{Profile: &acp.Qwen, BaseURL: baseURL, Getenv: func(k string) string {
				if k == "QWEN_API_KEY" {
					return "sk-key-of-" + name
				}
				return ""
			}},
			Env: []string{"CLOPEN_MARK=mark-of-" + name}},
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
		{"read its own provider key", "env | grep -a -o 'sk-key-of-tenant-[b]' | head -1; grep -rao 'sk-key-of-tenant-[b]' $HOME 2>/dev/null | head -1", "sk-key-of-tenant-b"},
		{"connect to NATS", "timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/4222 && echo OPEN$((4000+222))'", "OPEN4222"},
	} {
		t.Run(at.name, func(t *testing.T) {
			if out := sh(t, b, bws, "tenant-b", at.command); strings.Contains(out, at.leak) {
				t.Errorf("attack succeeded: %q gave %q", at.command, at.leak)
			}
		})
	}
	if sb != nil {
		for _, k := range []string{"sk-key-of-tenant-a", "sk-key-of-tenant-b"} {
			if _, ok := keys.Load(k); !ok {
				t.Errorf("the model server never got %s through the proxy", k)
			}
		}
	}
}
