package acp_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestWarmTurns runs three turns of one chat on each real agent: the first
// starts the agent (cold), the next two reuse its process and continue (or,
// where the agent forks, fork) the session in it (warm). It logs the turn times docs/ENGINES.md quotes and
// fails if a follow-up turn started a process or lost the session.
func TestWarmTurns(t *testing.T) {
	sb := enginetest.NewSandbox(t, 30*time.Second)
	cache := filepath.Join(enginetest.EnginesDir(), "..", "engine-cache")
	for _, ag := range agents {
		t.Run(string(ag.profile.Type), func(t *testing.T) {
			bin := enginetest.InstalledBin(t, ag.profile.Type)
			e := acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap, KillGrace: time.Second}, Profile: ag.profile, CacheDir: cache, Credentials: acp.EnvCredentials{Profile: ag.profile, BaseURL: sb.BaseURL}},
				engine.Key{Engine: ag.profile.Type})
			defer e.Dispose(context.Background())
			ws, chat, resume := t.TempDir(), uuid.NewString(), ""
			var took []time.Duration
			for i := range 3 {
				rec := enginetest.NewRecorder()
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				began := time.Now()
				err := e.Run(ctx, engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: chat, Workspace: ws,
					Prompt: []events.Block{events.TextBlock{Text: "Say hello."}}, Model: ag.model, ResumeSessionID: resume,
					Interaction: rec}, rec.Emit)
				cancel()
				took = append(took, time.Since(began))
				outs := rec.Outputs()
				res, _ := outs[len(outs)-1].(events.Result)
				if err != nil || res.IsError() {
					t.Fatalf("turn %d: %v, %+v", i, err, res)
				}
				// An agent that forks reports a new session on every resume; the
				// others continue the resumed one in place.
				if resume != "" && (res.SessionID == resume) == ag.features.Fork {
					t.Errorf("turn %d reported session %s after resuming %s (the agent forks: %v)", i, res.SessionID, resume, ag.features.Fork)
				}
				resume = res.SessionID
			}
			if st := e.Stats(); st.Started != 1 || st.WarmHits != 2 {
				t.Errorf("stats = %+v, want one process for three turns", st)
			}
			t.Logf("%s turn times: cold %v, warm %v and %v", ag.profile.Type, took[0].Round(time.Millisecond),
				took[1].Round(time.Millisecond), took[2].Round(time.Millisecond))
		})
	}
}
