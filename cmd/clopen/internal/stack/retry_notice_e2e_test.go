package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/gateway/api"
)

// TestSilentRetriesAreTold: Cline retries a failed model call for over a
// minute and says nothing of it, over ACP or anywhere else. Run confined,
// its calls go through the worker's model proxy, which sees each 429: the
// session is told of the first within seconds, with the status, while the
// agent goes on retrying; a cancel then ends the turn.
func TestSilentRetriesAreTold(t *testing.T) {
	h := startConfined(t, fakellm.New(fakellm.Config{RetryAfter: time.Second}), events.EngineCline)
	a := h.account("silent-retries")
	ctx := context.Background()
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineCline, Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	tenant, err := h.tenantOf(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "@@RATELIMIT@@ Say hello."})
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	var told *events.Notification
	for deadline := time.Now().Add(60 * time.Second); told == nil && time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		envs, err := h.readRunEvents(tenant, sent.RunID)
		if err != nil {
			continue
		}
		for _, env := range envs {
			if n, ok := env.Output.(events.Notification); ok && strings.Contains(n.Title, "HTTP 429") {
				told = &n
				break
			}
			if st, ok := env.Output.(events.RunState); ok && st.State.Terminal() {
				t.Fatalf("the run ended (%s) before the session was told of a failed call", st.State)
			}
		}
	}
	if told == nil {
		t.Fatal("no notice of the provider's 429 within 60 s")
	}
	t.Logf("told after %v: %s: %s", time.Since(began).Round(time.Millisecond), told.Title, told.Message)
	if told.Level != events.LevelWarning || !strings.Contains(told.Message, "rate limited") || !strings.Contains(told.Message, "failure 1") {
		t.Errorf("notice = %+v, want a warning naming the status and the first failure", told)
	}
	if run, err := a.c.Run(ctx, sent.RunID); err != nil || run.State.Terminal() {
		t.Errorf("run while Cline retries: %+v (%v), want it still going", run.State, err)
	}
	if _, err := a.c.Cancel(ctx, s.ID, sent.RunID); err != nil {
		t.Fatal(err)
	}
	ended, stop := context.WithTimeout(ctx, time.Minute)
	defer stop()
	waitRunEnded(ended, t, a.c, sent.RunID, events.RunCancelled)
}
