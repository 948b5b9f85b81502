package pi_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// newTestEngine is an adapter on the pinned pi inside sb.
func newTestEngine(t *testing.T, sb *enginetest.Sandbox) *pi.Engine {
	t.Helper()
	bin := enginetest.InstalledBin(t, events.EnginePi)
	e := pi.New(pi.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap}, Credentials: pi.EnvCredentials{BaseURL: sb.BaseURL}},
		engine.Key{Engine: events.EnginePi})
	t.Cleanup(func() { _ = e.Dispose(context.Background()) })
	return e
}

// runTurn runs one turn of chat on e and returns its result and how long
// the turn took.
func runTurn(t *testing.T, e engine.Engine, chat, ws, prompt, resume string) (events.Result, time.Duration, error) {
	t.Helper()
	return enginetest.RunTurn(t, e, engine.Request{Tenant: "t", SessionID: chat, ProjectID: "p", Workspace: ws,
		Prompt: []events.Block{events.TextBlock{Text: prompt}}, Model: testModel, ResumeSessionID: resume})
}

// TestWarmProcess: a chat's next turn runs on the pi its last turn used
// (it clones the session, so the session still changes); another chat gets
// its own. The times of a cold and a warm turn are logged (see
// docs/ENGINES.md).
func TestWarmProcess(t *testing.T) {
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := newTestEngine(t, sb)
	ws, chat := t.TempDir(), uuid.NewString()
	r1, cold, err := runTurn(t, e, chat, ws, "Remember APPLE-7.", "")
	if err != nil || r1.IsError() {
		t.Fatalf("first turn: %+v, %v", r1, err)
	}
	r2, warm, err := runTurn(t, e, chat, ws, "Which word?", r1.SessionID)
	if err != nil || r2.IsError() || r2.SessionID == r1.SessionID {
		t.Fatalf("second turn: %+v, %v; want a success in a new (cloned) session", r2, err)
	}
	if st := e.Stats(); st.Started != 1 || st.WarmHits != 1 {
		t.Errorf("stats after two turns of one chat = %+v, want one start and one warm hit", st)
	}
	reqs := sb.Requests(t)
	if last := reqs[len(reqs)-1].UserTurns; !slices.Equal(last, []string{"Remember APPLE-7.", "Which word?"}) {
		t.Errorf("the warm turn sent user turns %q, want the first turn's too", last)
	}
	if _, _, err := runTurn(t, e, uuid.NewString(), ws, "Say hello.", ""); err != nil {
		t.Fatal(err)
	}
	if st := e.Stats(); st.Started != 2 {
		t.Errorf("stats after another chat's turn = %+v, want a second start", st)
	}
	t.Logf("cold turn %v, warm turn %v", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
}

// TestPromptStartingWithAt: pi's CLI reads an argument starting with @ as a
// file to attach; a prompt must never be. The RPC mode passes the message
// as it is, which this pins: the model gets exactly the text, although a
// file of that name exists in the workspace.
func TestPromptStartingWithAt(t *testing.T) {
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := newTestEngine(t, sb)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "notes.md"), []byte("SECRET-CONTENT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, prompt := range []string{"@notes.md what is in it?", "@@TOOL@@ run it"} {
		res, _, err := runTurn(t, e, uuid.NewString(), ws, prompt, "")
		if err != nil || res.IsError() {
			t.Fatalf("turn %q: %+v, %v", prompt, res, err)
		}
		var last []string
		for _, r := range sb.Requests(t) {
			if len(r.UserTurns) > 0 {
				last = r.UserTurns
			}
		}
		if len(last) != 1 || last[0] != prompt {
			t.Errorf("the model got user turns %q, want exactly %q", last, prompt)
		}
	}
}

// TestResumeUnknownSession: resuming a session this project does not have
// fails cleanly, as an invalid request, not as a crash.
func TestResumeUnknownSession(t *testing.T) {
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := newTestEngine(t, sb)
	_, _, err := runTurn(t, e, uuid.NewString(), t.TempDir(), "hi", uuid.NewString())
	t.Log(err)
	if engine.KindOf(err) != events.KindInvalidRequest {
		t.Errorf("Run resuming an unknown session = %v (kind %s), want an invalid request", err, engine.KindOf(err))
	}
}
