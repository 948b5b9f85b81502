package acp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// fakeEngine is an adapter for the scripted fake agent (this test binary).
func fakeEngine(t *testing.T) *acp.Engine {
	t.Helper()
	p := acp.Custom(acp.CustomConfig{Command: os.Args[0], Env: map[string]string{fakeAgentEnv: "1"}})
	e := acp.New(acp.Config{Process: engine.Process{Bin: os.Args[0], StateDir: t.TempDir(), KillGrace: time.Second, InterruptGrace: 5 * time.Second, Logger: testLogger(t)}, Profile: p, Credentials: acp.EnvCredentials{Profile: p}}, engine.Key{Engine: events.EngineACP, Tenant: "t"})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Dispose(ctx); err != nil {
			t.Errorf("Dispose: %v", err)
		}
	})
	return e
}

// fakeTurn runs one turn on the fake agent and checks its structure.
func fakeTurn(t *testing.T, ctx context.Context, e *acp.Engine, ws, prompt, resume string, rec *enginetest.Recorder) (events.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	err := e.Run(ctx, engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: "chat", Workspace: ws,
		Prompt: []events.Block{events.TextBlock{Text: prompt}}, ResumeSessionID: resume, Interaction: rec}, rec.Emit)
	outs := rec.Outputs()
	for _, e := range enginetest.CheckTurn(events.EngineACP, outs, true) {
		t.Errorf("turn %q: %v", prompt, e)
	}
	if len(outs) == 0 {
		return events.Result{}, err
	}
	res, _ := outs[len(outs)-1].(events.Result)
	return res, err
}

// lastText is the text of the turn's last assistant message.
func lastText(outs []events.Output) string {
	for i := len(outs) - 1; i >= 0; i-- {
		if a, ok := outs[i].(events.AssistantMessage); ok {
			for _, b := range a.Content {
				if tb, ok := b.(events.TextBlock); ok {
					return tb.Text
				}
			}
		}
	}
	return ""
}

// TestFSConfinedToWorkspace: fs/read_text_file and fs/write_text_file
// serve the workspace and refuse, with a JSON-RPC error, every path that
// leaves it: .., an absolute path elsewhere, a symlink pointing out.
func TestFSConfinedToWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	must(t, os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("inside-content"), 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "outside.txt"), []byte("outside-content"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(ws, "link")))
	must(t, os.Symlink(filepath.Join(outside, "outside.txt"), filepath.Join(ws, "file-link")))
	rel, err := filepath.Rel(ws, filepath.Join(outside, "outside.txt"))
	must(t, err)
	e := fakeEngine(t)
	rec := enginetest.NewRecorder()
	paths := []string{"inside.txt", filepath.Join(ws, "inside.txt"), rel, filepath.Join(outside, "outside.txt"),
		"link/outside.txt", "file-link", "missing.txt"}
	res, err := fakeTurn(t, context.Background(), e, ws, "fs "+strings.Join(paths, " "), "", rec)
	if err != nil || res.IsError() {
		t.Fatalf("turn: %v, %+v", err, res)
	}
	got := strings.Split(lastText(rec.Outputs()), "\n")
	tests := []struct {
		give string
		want string
	}{
		{"read inside.txt", `{"content":"inside-content"}`},
		{"read " + filepath.Join(ws, "inside.txt"), `{"content":"inside-content"}`},
		{"read " + rel, `"code":-32000`},
		{"read " + filepath.Join(outside, "outside.txt"), `"code":-32000`},
		{"read link/outside.txt", `"code":-32000`},
		{"read file-link", `"code":-32000`},
		{"read missing.txt", `"code":-32002`},
		{"write sub/written.txt", `{}`},
		{"write ../escape.txt", `"code":-32000`},
	}
	if len(got) != len(tests) {
		t.Fatalf("agent saw %d answers, want %d: %q", len(got), len(tests), got)
	}
	for i, tt := range tests {
		if !strings.HasPrefix(got[i], tt.give+": ") || !strings.Contains(got[i], tt.want) || strings.Contains(got[i], "outside-content") {
			t.Errorf("%s = %q, want an answer containing %s", tt.give, got[i], tt.want)
		}
	}
	if data, err := os.ReadFile(filepath.Join(ws, "sub", "written.txt")); err != nil || string(data) != "x" {
		t.Errorf("written file = %q, %v; want x", data, err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(ws), "escape.txt")); !os.IsNotExist(err) {
		t.Errorf("a write outside the workspace happened: %v", err)
	}
}

// TestUnknownUpdateIgnored: an update kind the client does not know is
// dropped (and logged once), and the turn goes on.
func TestUnknownUpdateIgnored(t *testing.T) {
	e := fakeEngine(t)
	rec := enginetest.NewRecorder()
	res, err := fakeTurn(t, context.Background(), e, t.TempDir(), "unknown", "", rec)
	if err != nil || res.IsError() || lastText(rec.Outputs()) != "ok" {
		t.Fatalf("turn = %v, %+v, text %q; want success saying ok", err, res, lastText(rec.Outputs()))
	}
	for _, o := range rec.Outputs() {
		if b, _ := events.EncodeOutput(o); strings.Contains(string(b), "secret") {
			t.Errorf("the unknown update leaked into %s", b)
		}
	}
}

// TestPlanBecomesTodoWrite: a plan is a TodoWrite call with its result.
func TestPlanBecomesTodoWrite(t *testing.T) {
	e := fakeEngine(t)
	rec := enginetest.NewRecorder()
	if _, err := fakeTurn(t, context.Background(), e, t.TempDir(), "plan", "", rec); err != nil {
		t.Fatal(err)
	}
	var input string
	for _, o := range rec.Outputs() {
		if a, ok := o.(events.AssistantMessage); ok {
			for _, b := range a.Content {
				if tu, ok := b.(events.ToolUseBlock); ok && tu.Name == string(events.ToolTodoWrite) {
					input = string(tu.Input)
				}
			}
		}
	}
	want := `{"todos":[{"content":"Read","status":"completed","activeForm":"Read"},{"content":"Write","status":"in_progress","activeForm":"Write"}]}`
	if input != want {
		t.Errorf("TodoWrite input = %s, want %s", input, want)
	}
}

// TestPermissionAnswers: the decision picks the agent's allow-once or
// reject-once option; a refusal is the call's error result.
func TestPermissionAnswers(t *testing.T) {
	tests := []struct {
		name    string
		decide  func(engine.PermissionRequest) engine.Decision
		want    string
		wantErr bool
	}{
		{"allow", nil, `"optionId":"yes"`, false},
		{"deny", enginetest.DenyAll, `"optionId":"no"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := fakeEngine(t)
			rec := enginetest.NewRecorder()
			rec.Decide = tt.decide
			if _, err := fakeTurn(t, context.Background(), e, t.TempDir(), "permission", "", rec); err != nil {
				t.Fatal(err)
			}
			if got := lastText(rec.Outputs()); !strings.Contains(got, tt.want) {
				t.Errorf("agent got %q, want %s", got, tt.want)
			}
			permits := rec.Permits()
			if len(permits) != 1 || permits[0].Tool != "Bash" || string(permits[0].Input) != `{"command":"ls"}` {
				t.Errorf("permits = %+v, want one Bash {command: ls}", permits)
			}
			_, denied := findResult(rec.Outputs(), "call-1")
			if denied != tt.wantErr {
				t.Errorf("error result for the call = %v, want %v", denied, tt.wantErr)
			}
		})
	}
}

func findResult(outs []events.Output, id string) (string, bool) {
	for _, o := range outs {
		if u, ok := o.(events.UserMessage); ok {
			for _, b := range u.Content {
				if tr, ok := b.(events.ToolResultBlock); ok && tr.ToolUseID == id {
					return tr.Content, tr.IsError
				}
			}
		}
	}
	return "", false
}

// TestInterruptKeepsWarmSession: an interrupt is session/cancel; the turn
// ends interrupted, and the next turn resumes the same session on the same
// (warm) process.
func TestInterruptKeepsWarmSession(t *testing.T) {
	e := fakeEngine(t)
	ws := t.TempDir()
	rec := enginetest.NewRecorder()
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	go func() { <-rec.FirstDelta(); stop(engine.ErrInterrupted) }()
	res, err := fakeTurn(t, ctx, e, ws, "slow", "", rec)
	if err != nil || !res.IsError() || res.Errors[0] != "Interrupted by user" || res.SessionID == "" {
		t.Fatalf("interrupted turn = %v, %+v; want an interrupted result", err, res)
	}
	next := enginetest.NewRecorder()
	res2, err := fakeTurn(t, context.Background(), e, ws, "again", res.SessionID, next)
	if err != nil || res2.IsError() || res2.SessionID != res.SessionID || lastText(next.Outputs()) != "echo: again" {
		t.Fatalf("turn after the interrupt = %v, %+v; want a success in session %s", err, res2, res.SessionID)
	}
	if st := e.Stats(); st.Started != 1 || st.WarmHits != 1 {
		t.Errorf("stats = %+v, want one process started and one warm hit", st)
	}
	if res2.Usage.InputTokens != 3 || res2.Usage.OutputTokens != 2 {
		t.Errorf("usage = %+v, want the prompt response's", res2.Usage)
	}
}

// TestResumeUnsupportedNotifies: an agent that can neither load nor resume
// a session (and no longer has it open) gets a new session, and the turn
// says so before anything else.
func TestResumeUnsupportedNotifies(t *testing.T) {
	e := fakeEngine(t)
	rec := enginetest.NewRecorder()
	res, err := fakeTurn(t, context.Background(), e, t.TempDir(), "hi", "gone-session", rec)
	if err != nil || res.IsError() || res.SessionID == "gone-session" {
		t.Fatalf("turn = %v, %+v; want a success in a new session", err, res)
	}
	outs := rec.Outputs()
	n, ok := outs[1].(events.Notification)
	if !ok || n.Level != events.LevelWarning || !strings.Contains(n.Message, "gone-session") || !strings.Contains(n.Message, "does not see the earlier messages") {
		t.Errorf("second output = %+v, want a warning that the history is not visible", outs[1])
	}
}

// TestCancelStopsProcess: a cancel returns the cause promptly and leaves
// no process behind.
func TestCancelStopsProcess(t *testing.T) {
	e := fakeEngine(t)
	rec := enginetest.NewRecorder()
	ctx, stop := context.WithCancelCause(context.Background())
	go func() { <-rec.FirstDelta(); stop(engine.ErrCancelled) }()
	err := e.Run(ctx, engine.Request{Tenant: "t", RunID: "r", SessionID: "c", Workspace: t.TempDir(),
		Prompt: []events.Block{events.TextBlock{Text: "slow"}}, Interaction: rec}, rec.Emit)
	if err != engine.ErrCancelled {
		t.Errorf("Run = %v, want ErrCancelled", err)
	}
	if e.Warm() != 0 {
		t.Errorf("a cancelled process was kept warm")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
