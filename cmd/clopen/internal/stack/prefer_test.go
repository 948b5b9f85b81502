package stack

import (
	"fmt"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

// TestDispatchPrefersTheWorkerHoldingTheSnapshot runs a session's turns
// one after another on two idle workers, each with its own disk: every
// turn after the first runs where the previous one left the session's
// snapshot, so none has to restore it (without the preference a turn
// lands on either worker). That the preference never holds a turn up
// when its holder is gone is TestPortableRuns' and
// TestRetryLostRunOnAnotherWorker's part.
func TestDispatchPrefersTheWorkerHoldingTheSnapshot(t *testing.T) {
	h := start(t, Config{Dir: t.TempDir(), Workers: 2})
	h.waitWorkers(2)
	tn := newTenant()
	s := h.session(tn, "scripted/tools")

	var first string
	for i := range 8 {
		r := h.send(tn, s.ID, fmt.Sprint("turn ", i))
		run := h.waitTerminal(tn, r.RunID, time.Minute)
		if run.State != events.RunCompleted || run.Snapshot == nil {
			t.Fatalf("turn %d: %s (%s), snapshot %v; want completed with a snapshot", i, run.State, run.Error, run.Snapshot)
		}
		if i == 0 {
			first = run.WorkerID
			continue
		}
		if run.WorkerID != first {
			t.Fatalf("turn %d ran on %s, but %s holds the session's snapshot and was idle", i, run.WorkerID, first)
		}
	}
}

// waitTerminal waits until run has ended and returns it.
func (h *harness) waitTerminal(tn tenant, run string, within time.Duration) events.Run {
	h.t.Helper()
	deadline := time.Now().Add(within)
	var r events.Run
	for time.Now().Before(deadline) {
		h.must(events.OpRunGet, events.RunRef{Caller: tn.Caller, RunID: run}, &r)
		if r.State.Terminal() {
			return r
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("run %s is still %s after %v", run, r.State, within)
	return r
}
