package stack

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/health"
	"clopen.dev/services/streammgr"
)

// inProcess is a streammgr running in the test's process.
type inProcess struct {
	nc     *nats.Conn
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// runStreammgr runs a streammgr in this process on a connection of its own
// until it is stopped (at the latest when the test ends).
func (h *harness) runStreammgr(cfg streammgr.Config, log *slog.Logger) *inProcess {
	sm := &inProcess{nc: h.connect()}
	cfg.Tokens = h.st.Keys.Only(streammgr.TokenKeys)
	ctx, cancel := context.WithCancel(context.Background())
	sm.cancel = cancel
	sm.wg.Add(1)
	go func() {
		defer sm.wg.Done()
		_ = streammgr.Run(ctx, cfg, streammgr.Deps{NATS: sm.nc, DB: h.st.DB, Logger: log, Health: health.New()})
	}()
	h.t.Cleanup(sm.Stop)
	return sm
}

// Stop shuts streammgr down gracefully: what it routed is committed and acked.
func (sm *inProcess) Stop() { sm.once.Do(func() { sm.cancel(); sm.wg.Wait(); sm.nc.Close() }) }

// Kill drops its connection first: in-flight acks and batches are lost.
func (sm *inProcess) Kill() { sm.once.Do(func() { sm.nc.Close(); sm.cancel(); sm.wg.Wait() }) }

// TestTheEventsConsumerKeepsItsPin runs two streammgrs on the EVENTS
// consumer through quiet spells and a turn each longer than the pin's TTL:
// the instance that routes keeps the pin all along — the server never
// unpins it, none of its pull requests is refused with a pin mismatch, and
// the other instance is never pinned while it lives — so no two instances
// route the same run's events at once.
func TestTheEventsConsumerKeepsItsPin(t *testing.T) {
	h := start(t, Config{NoStreammgr: true})
	cfg := streammgr.DefaultConfig()
	cfg.AckWait = 4 * time.Second // the pin's TTL
	var pinned, unpinned atomic.Int32
	for subject, n := range map[string]*atomic.Int32{
		"$JS.EVENT.ADVISORY.CONSUMER.PINNED." + events.StreamEvents + ".streammgr":   &pinned,
		"$JS.EVENT.ADVISORY.CONSUMER.UNPINNED." + events.StreamEvents + ".streammgr": &unpinned,
	} {
		sub, err := h.nc.Subscribe(subject, func(*nats.Msg) { n.Add(1) })
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	var mismatches atomic.Int32
	for range 2 {
		h.runStreammgr(cfg, slog.New(&logCounter{match: "pin ID mismatch", n: &mismatches}))
	}
	h.waitService("streammgr")
	tn := newTenant()
	quick := h.session(tn, "scripted/hello")
	feed := h.follow(tn.TenantID, quick.ID, 0)
	for range 2 {
		r := h.send(tn, quick.ID, "hello")
		feed.waitFor(t, 30*time.Second, finished(r.RunID))
		time.Sleep(cfg.AckWait + time.Second) // a quiet spell longer than the TTL
	}
	long := h.startTurns(tn, 1, "scripted/slow?delay=25ms") // about 6 s of deltas
	h.checkTurns(tn, long, slowText)
	if err := h.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if n, u, m := pinned.Load(), unpinned.Load(), mismatches.Load(); n != 1 || u != 0 || m != 0 {
		t.Errorf("the consumer was pinned %d times and unpinned %d times, and its pull requests were refused %d times "+
			"with a pin mismatch; want pinned once, never unpinned, never refused", n, u, m)
	}
}

// logCounter is a slog handler counting the records whose message or an
// attribute contains match.
type logCounter struct {
	match string
	n     *atomic.Int32
}

func (c *logCounter) Enabled(context.Context, slog.Level) bool { return true }

func (c *logCounter) Handle(_ context.Context, r slog.Record) error {
	found := strings.Contains(r.Message, c.match)
	r.Attrs(func(a slog.Attr) bool {
		found = found || strings.Contains(a.Value.String(), c.match)
		return !found
	})
	if found {
		c.n.Add(1)
	}
	return nil
}

func (c *logCounter) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *logCounter) WithGroup(string) slog.Handler      { return c }
