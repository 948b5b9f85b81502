package claude_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestResumeUnknownSession: resuming a session this instance does not have
// (another worker's, or one whose state was removed) fails cleanly, as an
// invalid request that says so, not as a crash.
func TestResumeUnknownSession(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineClaudeCode)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	e := claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: t.TempDir(), Wrap: sb.Wrap}, Credentials: claude.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineClaudeCode})
	defer e.Dispose(context.Background())
	rec := enginetest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := e.Run(ctx, engine.Request{Tenant: "t", RunID: uuid.NewString(), SessionID: uuid.NewString(), Workspace: t.TempDir(),
		Prompt: []events.Block{events.TextBlock{Text: "hi"}}, ResumeSessionID: uuid.NewString(), Interaction: rec}, rec.Emit)
	t.Log(err)
	if engine.KindOf(err) != events.KindInvalidRequest || !strings.Contains(err.Error(), "onversation") {
		t.Errorf("Run resuming an unknown session = %v (kind %s), want an invalid request naming the missing conversation", err, engine.KindOf(err))
	}
}
