package claude_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestWarmProcesses follows one chat through its warm processes: after a
// turn the next one's process is waiting (forked from the turn's session);
// a turn resuming that session takes it; a turn resuming another session,
// or with another model, starts its own; the idle timeout and Dispose
// retire what is left.
func TestWarmProcesses(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineClaudeCode)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap, IdleTimeout: 3 * time.Second}, Credentials: claude.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineClaudeCode})
	ws, chat := t.TempDir(), uuid.NewString()
	turn := func(resume, model string) events.Result {
		t.Helper()
		rec := enginetest.NewRecorder()
		err := e.Run(context.Background(), engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: chat, Workspace: ws,
			Prompt: []events.Block{events.TextBlock{Text: "Say hello."}}, Model: model, ResumeSessionID: resume, Interaction: rec}, rec.Emit)
		outs := rec.Outputs()
		res, _ := outs[len(outs)-1].(events.Result)
		if err != nil || res.Subtype != events.ResultSuccess {
			t.Fatalf("turn: %v, %+v", err, res)
		}
		return res
	}
	waitWarm := func(n int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for e.Warm() != n {
			if time.Now().After(deadline) {
				t.Fatalf("warm processes = %d, want %d", e.Warm(), n)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	r1 := turn("", claude.DefaultModel)
	waitWarm(1)
	r2 := turn(r1.SessionID, claude.DefaultModel)
	if s := e.Stats(); s.WarmHits != 1 || s.Started != 2 { // the warm one is the 2nd
		t.Errorf("after a follow-up: %+v, want 2 started and 1 warm hit", s)
	}
	if r2.SessionID == r1.SessionID {
		t.Errorf("the warm turn reported the session it resumed (%s): it must fork", r1.SessionID)
	}
	waitWarm(1)
	turn(r1.SessionID, claude.DefaultModel) // not the session the warm process holds
	waitWarm(1)
	turn(r2.SessionID, "claude-sonnet-5-5") // the session, but another model
	waitWarm(1)
	// 4 turns, 3 of them cold, and a warm process after each.
	if s := e.Stats(); s.WarmHits != 1 || s.Started != 7 {
		t.Errorf("after two turns that do not fit the warm process: %+v, want 7 started and still 1 warm hit", s)
	}
	time.Sleep(3500 * time.Millisecond)
	if n := e.Warm(); n != 0 {
		t.Errorf("warm processes after the idle timeout = %d, want 0", n)
	}
	turn(r2.SessionID, claude.DefaultModel)
	waitWarm(1)
	if err := e.Dispose(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.Warm(); n != 0 {
		t.Errorf("warm processes after Dispose = %d", n)
	}
}
