package fakellm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"go.uber.org/goleak"

	"clopen.dev/services/engine-worker/fakellm"
)

func TestMain(m *testing.M) {
	// genai's dependencies start opencensus' stats worker in an init function.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// fixture is a fakellm.Server behind an httptest server, with a signal for
// each handler that returned.
type fixture struct {
	srv  *fakellm.Server
	url  string
	done chan struct{} // one value per finished request
	hc   *http.Client
}

func newFixture(t *testing.T, cfg fakellm.Config) *fixture {
	t.Helper()
	f := &fixture{srv: fakellm.New(cfg), done: make(chan struct{}, 64)}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.srv.ServeHTTP(w, r)
		select {
		case f.done <- struct{}{}:
		default: // nobody is counting
		}
	}))
	tr := &http.Transport{}
	f.url, f.hc = ts.URL, &http.Client{Transport: tr}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.Close()
	})
	return f
}

// assertStalled fails the test if a handler has already returned: a slow
// stream must still be open when the client cancels.
func (f *fixture) assertStalled(t *testing.T) {
	t.Helper()
	time.Sleep(150 * time.Millisecond) // a few keep-alive ticks
	select {
	case <-f.done:
		t.Fatal("the handler returned before the client cancelled; @@SLOW@@ did not stall")
	default:
	}
}

// waitHandler fails the test unless a handler returns within d.
func (f *fixture) waitHandler(t *testing.T, d time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	select {
	case <-f.done:
		return time.Since(start)
	case <-time.After(d):
		t.Fatalf("handler still running %v after the client cancelled", d)
		return 0
	}
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Tool schemas as real agents offer them.
var (
	claudeBash = map[string]any{"type": "object", "properties": map[string]any{
		"command":     map[string]any{"type": "string"},
		"timeout":     map[string]any{"type": "number"},
		"description": map[string]any{"type": "string"},
	}, "required": []any{"command"}}
	codexExec = map[string]any{"type": "object", "properties": map[string]any{
		"cmd":     map[string]any{"type": "string"},
		"workdir": map[string]any{"type": "string"},
	}, "required": []any{"cmd"}}
	clineRun = map[string]any{"type": "object", "properties": map[string]any{
		"commands": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}, "required": []any{"commands"}}
	argvShell = map[string]any{"type": "object", "properties": map[string]any{
		"command": map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
	}, "required": []any{"command"}}
	geminiShell = map[string]any{"type": "object", "properties": map[string]any{
		"command":       map[string]any{"type": "string"},
		"description":   map[string]any{"type": "string"},
		"is_background": map[string]any{"type": "boolean"},
	}, "required": []any{"command", "is_background"}}
)

const shellCommand = "echo fakellm-tool-ran > fakellm_out.txt && echo ok"

// shellTests are the shell schemas and the arguments @@TOOL@@ must produce.
var shellTests = []struct {
	name   string
	tool   string
	schema map[string]any
	want   map[string]any
}{
	{"claude Bash", "Bash", claudeBash, map[string]any{"command": shellCommand, "description": "Write a marker file"}},
	{"codex exec_command", "exec_command", codexExec, map[string]any{"cmd": shellCommand}},
	{"cline run_commands", "run_commands", clineRun, map[string]any{"commands": []any{shellCommand}}},
	{"argv shell", "shell", argvShell, map[string]any{"command": []any{"bash", "-lc", shellCommand}}},
	{"gemini run_shell_command", "run_shell_command", geminiShell,
		map[string]any{"command": shellCommand, "description": "Write a marker file", "is_background": false}},
}
