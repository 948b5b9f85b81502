package claude_test

import (
	"context"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// TestSandboxTTFT measures what the sandbox costs: time to first text of a
// first turn (a fresh process) and of a follow-up (the warm process), with
// and without it, interleaved in five rounds of one run. CLOPEN_SANDBOX_TTFT=1
// turns it on; docs/PERFORMANCE.md has the numbers.
func TestSandboxTTFT(t *testing.T) {
	if os.Getenv("CLOPEN_SANDBOX_TTFT") == "" {
		t.Skip("set CLOPEN_SANDBOX_TTFT=1 to measure")
	}
	rounds := 5
	confined := newHostileWorker(t)
	t.Setenv(enginetest.HostileUnconfined, "1")
	bare := newHostileWorker(t)
	ws := map[string]enginetest.HostileTenant{"sandbox": newTenant(t, confined, "tenant-s"), "none": newTenant(t, bare, "tenant-n")}
	first, follow := map[string][]time.Duration{}, map[string][]time.Duration{}
	for range rounds {
		for _, mode := range []string{"none", "sandbox"} {
			tn := ws[mode]
			session := uuid.NewString()
			d1, resume := ttftTurn(t, tn, session, "")
			time.Sleep(2 * time.Second) // the warm process starts
			d2, _ := ttftTurn(t, tn, session, resume)
			first[mode], follow[mode] = append(first[mode], d1), append(follow[mode], d2)
		}
	}
	for _, mode := range []string{"none", "sandbox"} {
		t.Logf("%-8s first turn median %v %v; follow-up median %v %v", mode, median(first[mode]), first[mode], median(follow[mode]), follow[mode])
	}
	t.Logf("ratio sandbox/none: first %.2f, follow-up %.2f",
		float64(median(first["sandbox"]))/float64(median(first["none"])),
		float64(median(follow["sandbox"]))/float64(median(follow["none"])))
}

func ttftTurn(t *testing.T, tn enginetest.HostileTenant, session, resume string) (time.Duration, string) {
	t.Helper()
	rec := enginetest.NewRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := tn.Engine.Run(ctx, engine.Request{Tenant: tn.Name, RunID: uuid.NewString(), SessionID: session,
		Workspace: tn.Workspace, Prompt: []events.Block{events.TextBlock{Text: "hi"}}, Model: tn.Model,
		ResumeSessionID: resume, Interaction: rec}, rec.Emit); err != nil {
		t.Fatal(err)
	}
	var sid string
	for _, o := range rec.Outputs() {
		if s := events.SessionIDOf(o); s != "" {
			sid = s
		}
	}
	return rec.TimeToFirstText(), sid
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
