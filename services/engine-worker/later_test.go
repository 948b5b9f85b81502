package worker

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// An engine that becomes ready after the worker started (Deps.Later) is
// offered from then on: its jobs get a consumer, its endpoints answer and
// the worker's heartbeat advertises it. Withdrawn (its install removed),
// it is no longer advertised, its endpoints go while the others' stay, and
// its jobs wait for another worker; offered again, it takes them.
func TestAnEngineReadyLaterIsOfferedAndWithdrawn(t *testing.T) {
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	jobs, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: events.StreamJobs, Subjects: []string{events.SubjectJobsAll},
		Retention: jetstream.WorkQueuePolicy})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: events.BucketRunCtl}); err != nil {
		t.Fatal(err)
	}
	release, remove, reinstall := make(chan struct{}), make(chan struct{}), make(chan struct{})
	later := func(ctx context.Context, ch engines.Changes) {
		ch.Unready(events.EngineCodex, engines.NotResponding, "it did not answer in time")
		for _, step := range []chan struct{}{release, remove, reinstall} {
			select {
			case <-step:
			case <-ctx.Done():
				return
			}
			if step == remove {
				ch.Withdraw(events.EngineCodex, "its binary is gone")
				ch.Unready(events.EngineCodex, engines.NotInstalled, "reinstall it")
				continue
			}
			ch.Offer(events.EngineCodex, enginetest.Factory(&enginetest.Answers{EngineType: events.EngineCodex}), "9.9.9")
		}
	}
	w, err := New(Config{ID: "w1", Capacity: 1, Workspaces: filepath.Join(t.TempDir(), "ws"), Tokens: testKeys.Only(TokenKeys)},
		Deps{NATS: nc, Logger: logging.Discard(), Health: health.New(), Later: later})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()

	var beats jetstream.KeyValue
	waitUntil(t, "the workers bucket exists", func() bool {
		beats, err = js.KeyValue(ctx, events.BucketWorkers)
		return err == nil
	})
	advertised := func() map[events.EngineType]string {
		e, err := beats.Get(ctx, "w1")
		if err != nil {
			return nil
		}
		var info events.WorkerInfo
		_ = json.Unmarshal(e.Value(), &info)
		out := map[events.EngineType]string{}
		for _, st := range info.Engines {
			out[st.Engine] = st.Version
		}
		return out
	}
	// unready is what the heartbeat says of codex's not being offered.
	unready := func() string {
		e, err := beats.Get(ctx, "w1")
		if err != nil {
			return ""
		}
		var info events.WorkerInfo
		_ = json.Unmarshal(e.Value(), &info)
		for _, p := range info.Unready {
			if p.Engine == events.EngineCodex {
				return p.State + ": " + p.Fix
			}
		}
		return ""
	}
	waitUntil(t, "the worker advertises the scripted engine", func() bool { return advertised()[events.EngineScripted] != "" })
	if v, ok := advertised()[events.EngineCodex]; ok {
		t.Fatalf("codex advertised (%q) before it was ready", v)
	}
	waitUntil(t, "the heartbeat says why codex is not offered", func() bool { return unready() == "not-responding: it did not answer in time" })

	close(release)
	waitUntil(t, "the heartbeat advertises codex 9.9.9", func() bool { return advertised()[events.EngineCodex] == "9.9.9" })
	if u := unready(); u != "" {
		t.Errorf("codex is offered, but the heartbeat still says %q", u)
	}
	if _, err := jobs.Consumer(ctx, "engine-"+string(events.EngineCodex)); err != nil {
		t.Errorf("no job consumer for codex: %v", err)
	}
	subject, _ := events.EngineSubject(events.EngineCodex, events.OpModels)
	waitUntil(t, "codex's models endpoint answers", func() bool {
		_, err := nc.Request(subject, []byte(`{}`), time.Second)
		return err == nil // any reply: before, there were no responders
	})

	close(remove)
	waitUntil(t, "the heartbeat no longer advertises codex", func() bool {
		_, ok := advertised()[events.EngineCodex]
		return !ok && advertised()[events.EngineScripted] != ""
	})
	waitUntil(t, "the heartbeat says codex's install is gone", func() bool { return unready() == "not-installed: reinstall it" })
	waitUntil(t, "codex's endpoints are gone", func() bool {
		_, err := nc.Request(subject, []byte(`{}`), time.Second)
		return errors.Is(err, nats.ErrNoResponders)
	})
	scripted, _ := events.EngineSubject(events.EngineScripted, events.OpModels)
	waitUntil(t, "the scripted engine's endpoints still answer", func() bool {
		_, err := nc.Request(scripted, []byte(`{}`), time.Second)
		return err == nil
	})
	jobSubject, _ := events.JobSubject(string(events.EngineCodex))
	if _, err := js.Publish(ctx, jobSubject, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	cons, err := jobs.Consumer(ctx, "engine-"+string(events.EngineCodex))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // two fetch rounds of a loop that would still pull
	if info, err := cons.Info(ctx); err != nil || info.NumPending != 1 || info.NumAckPending != 0 {
		t.Fatalf("codex's job after the withdrawal: %+v, %v; want it waiting, untaken", info, err)
	}

	close(reinstall)
	waitUntil(t, "codex is advertised again", func() bool { return advertised()[events.EngineCodex] == "9.9.9" })
	waitUntil(t, "the worker takes the waiting codex job", func() bool {
		info, err := cons.Info(ctx)
		return err == nil && info.NumPending == 0
	})
	waitUntil(t, "codex's models endpoint answers again", func() bool {
		_, err := nc.Request(subject, []byte(`{}`), time.Second)
		return err == nil
	})
}

// waitUntil polls cond until it holds, failing after a generous deadline.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}
