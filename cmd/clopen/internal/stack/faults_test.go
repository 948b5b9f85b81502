package stack

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/pkg/platform/logging"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	"clopen.dev/services/streammgr"
)

// spawnWorker starts an engine worker as a separate process of this test
// binary, connected to the stack's NATS server.
func (h *harness) spawnWorker(id string, capacity int) *exec.Cmd {
	h.t.Helper()
	return h.spawn("worker", "CLOPEN_WORKER_ID="+id, "CLOPEN_WORKSPACES="+h.t.TempDir(),
		"CLOPEN_WORKER_CAPACITY="+strconv.Itoa(capacity))
}

// spawn starts a service (worker, streammgr, gateway) as a separate process of
// this test binary, on the stack's NATS server and database.
func (h *harness) spawn(role string, env ...string) *exec.Cmd {
	h.t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	identity := map[string]busauth.Role{"worker": busauth.Worker, "streammgr": busauth.Streammgr, "gateway": busauth.Gateway}[role]
	keys := map[string]bustoken.Need{"worker": worker.TokenKeys, "streammgr": streammgr.TokenKeys, "gateway": gateway.TokenKeys}[role]
	cmd.Env = append(append(os.Environ(), "CLOPEN_TEST_ROLE="+role, "CLOPEN_NATS_URL="+h.st.NATSURL,
		busauth.EnvPassword+"="+h.st.Bus[identity],
		"DATABASE_URL="+h.dbURL, "CLOPEN_LOG_LEVEL=error"), env...)
	// Only the role's own bus token keys, as a deployment gives them.
	cmd.Env = append(cmd.Env, strings.Fields(h.st.Keys.Only(keys).Env())...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestKilledWorkerRunIsLostOthersGoOn kills a worker process with SIGKILL in
// the middle of its runs: they become lost within the lease TTL plus 5 s and
// their clients are told, while the runs of another worker finish untouched.
func TestKilledWorkerRunIsLostOthersGoOn(t *testing.T) {
	h := start(t, Config{NoWorkers: true})
	tn := newTenant()
	// Six runs at once, on purpose: the tenant may run them.
	if err := streammgr.SetTenantLimits(context.Background(), h.st.DB, tn.TenantID,
		streammgr.TenantLimits{MaxConcurrent: ptr(6)}); err != nil {
		t.Fatal(err)
	}
	type turn struct {
		session string
		run     string
		feed    *chatFeed
		worker  string
	}
	var turns []*turn
	// The victim takes the first three runs and is then full, so the
	// survivor, started after, takes the next three. The victim's runs are
	// far longer than the test (they end with the kill), so none of its
	// slots frees up however slowly a loaded machine launches the second
	// batch; the survivor's take about 8 s.
	launch := func(want, model string) {
		var batch []*turn
		for range 3 {
			s := h.session(tn, model)
			f := h.follow(tn.TenantID, s.ID, 0)
			r := h.send(tn, s.ID, "keep going")
			batch = append(batch, &turn{session: s.ID, run: r.RunID, feed: f})
		}
		for _, tr := range batch {
			evs := tr.feed.waitFor(t, 10*time.Second, runState(tr.run, events.RunRunning))
			for _, ev := range evs {
				if rs, ok := ev.Data.(events.ChatRunState); ok && rs.State == events.RunClaimed {
					tr.worker = rs.Reason
				}
			}
			if tr.worker != want {
				t.Fatalf("run claimed by %q, want %q", tr.worker, want)
			}
		}
		turns = append(turns, batch...)
	}
	victim := h.spawnWorker("victim", 3)
	h.waitWorkers(1)
	launch("victim", "scripted/slow?delay=500ms")
	h.spawnWorker("survivor", 16)
	h.waitWorkers(2)
	launch("survivor", "scripted/slow?delay=20ms")

	killed := time.Now()
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, tr := range turns {
		if tr.worker == "victim" {
			evs := tr.feed.waitFor(t, 25*time.Second, finished(tr.run))
			took := time.Since(killed)
			if !has(evs, runState(tr.run, events.RunLost)) ||
				!has(evs, func(e events.ChatEvent) bool { return e.Type == events.ChatTypeError && e.RunID == tr.run }) {
				t.Errorf("run on the killed worker: %s", summarize(evs))
			}
			if took > 15*time.Second+5*time.Second {
				t.Errorf("lost after %v, want within lease TTL + 5 s", took)
			}
			t.Logf("run on the killed worker reported lost %v after the kill", took.Round(100*time.Millisecond))
		} else {
			evs := tr.feed.waitFor(t, 30*time.Second, finished(tr.run))
			if !has(evs, runState(tr.run, events.RunCompleted)) {
				t.Errorf("run on the surviving worker did not complete: %s", summarize(evs))
			}
		}
	}
	// The session of a lost run can be used again.
	for _, tr := range turns {
		if tr.worker == "victim" {
			h.waitRunState(tn, tr.run, events.RunLost)
			r := h.send(tn, tr.session, "again")
			if r.Queued {
				t.Error("the session of a lost run still holds it as active")
			}
			break
		}
	}
}

// TestStreammgrRestartMidTurnLosesAndDuplicatesNothing stops streammgr
// abruptly in the middle of turns (its connection dropped without draining,
// so events it routed were never acked), starts another, and checks every
// engine event is stored exactly once and every client frame arrives once.
func TestStreammgrRestartMidTurnLosesAndDuplicatesNothing(t *testing.T) {
	h := start(t, Config{NoStreammgr: true})
	cfg := streammgr.DefaultConfig()
	cfg.AckWait = 3 * time.Second
	runSM := func() (stop func()) { return h.runStreammgr(cfg, logging.Discard()).Kill }
	stop := runSM()
	h.waitService("streammgr")
	tn := newTenant()
	type turn struct {
		s, run string
		feed   *chatFeed
	}
	var turns []turn
	for range 3 {
		s := h.session(tn, "scripted/slow?delay=10ms")
		f := h.follow(tn.TenantID, s.ID, 0)
		turns = append(turns, turn{s.ID, h.send(tn, s.ID, "stream").RunID, f})
	}
	turns[0].feed.waitFor(t, 10*time.Second, func(ev events.ChatEvent) bool {
		p, ok := ev.Data.(events.ChatPartial)
		return ok && p.EventType == events.PartialUpdate
	})
	time.Sleep(300 * time.Millisecond)
	stop()
	time.Sleep(time.Second) // the worker keeps publishing meanwhile
	stop = runSM()
	defer stop()
	for _, tr := range turns {
		evs := tr.feed.waitFor(t, 60*time.Second, finished(tr.run))
		h.waitRunState(tn, tr.run, events.RunCompleted)
		published := h.runEventsOnBus(tn.TenantID, tr.run)
		var stored []events.StoredEvent
		h.must(events.OpRunEvents, events.RunEvents{Caller: tn.Caller, RunID: tr.run, Limit: 1000}, &stored)
		if len(stored) != len(published)+1 {
			t.Errorf("run %s: stored %d events, published %d (+1 user message)", tr.run, len(stored), len(published))
		}
		seen := map[string]bool{}
		for _, ev := range stored {
			k := strings.Join([]string{string(rune(ev.Epoch)), string(rune(ev.Seq))}, "/")
			if seen[k] {
				t.Errorf("run %s: event %d/%d stored twice", tr.run, ev.Epoch, ev.Seq)
			}
			seen[k] = true
		}
		// Every delta reached the client exactly once, in order.
		var text strings.Builder
		for _, ev := range evs {
			if p, ok := ev.Data.(events.ChatPartial); ok && ev.RunID == tr.run {
				text.WriteString(p.DeltaText)
			}
		}
		want := strings.Repeat("This answer takes a while to stream, one word at a time, so there is time to interrupt or cancel it. ", 20)
		if text.String() != want {
			t.Errorf("run %s: the client's text has gaps or repeats (%d of %d bytes)", tr.run, text.Len(), len(want))
		}
	}
}
