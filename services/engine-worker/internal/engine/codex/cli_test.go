package codex_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// runTurn runs one turn of chat on e and returns its result and how long
// the turn took.
func runTurn(t *testing.T, e engine.Engine, chat, ws, prompt, resume string) (events.Result, time.Duration, error) {
	t.Helper()
	return enginetest.RunTurn(t, e, engine.Request{Tenant: "t", SessionID: chat, Workspace: ws,
		Prompt: []events.Block{events.TextBlock{Text: prompt}}, Model: testModel, ResumeSessionID: resume})
}

// TestWarmAppServer: a chat's next turn runs on the app-server its last
// turn used (it forks the thread, so the session still changes); another
// chat gets its own. The times of a cold and a warm turn are logged (see
// docs/ENGINES.md).
func TestWarmAppServer(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap}, Credentials: codex.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineCodex})
	defer e.Dispose(context.Background())
	ws, chat := t.TempDir(), uuid.NewString()
	r1, cold, err := runTurn(t, e, chat, ws, "Say hello.", "")
	if err != nil || r1.IsError() {
		t.Fatalf("first turn: %+v, %v", r1, err)
	}
	if e.Warm() != 1 {
		t.Fatalf("warm app-servers after a turn = %d, want 1", e.Warm())
	}
	r2, warm, err := runTurn(t, e, chat, ws, "Say hello again.", r1.SessionID)
	if err != nil || r2.IsError() || r2.SessionID == r1.SessionID {
		t.Fatalf("second turn: %+v, %v; want a success in a new (forked) session", r2, err)
	}
	if st := e.Stats(); st.Started != 1 || st.WarmHits != 1 {
		t.Errorf("stats after two turns of one chat = %+v, want one start and one warm hit", st)
	}
	if _, _, err := runTurn(t, e, uuid.NewString(), ws, "Say hello.", ""); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Started != 2 {
		t.Errorf("stats after another chat's turn = %+v, want a second start", st)
	}
	t.Logf("cold turn %v, warm turn %v", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
}

// TestResumeUnknownThread: resuming a thread this CODEX_HOME does not have
// fails cleanly, as an invalid request, not as a crash.
func TestResumeUnknownThread(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap}, Credentials: codex.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineCodex})
	defer e.Dispose(context.Background())
	_, _, err := runTurn(t, e, uuid.NewString(), t.TempDir(), "hi", "01a22885-3a1f-7ec2-abc3-74f33a86ba17")
	t.Log(err)
	if engine.KindOf(err) != events.KindInvalidRequest {
		t.Errorf("Run resuming an unknown thread = %v (kind %s), want an invalid request", err, engine.KindOf(err))
	}
}
