package stack

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/embeddednats"
	"clopen.dev/pkg/platform/privatepg"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/streammgr"
)

// slowText is what scripted/slow streams.
var slowText = strings.Repeat("This answer takes a while to stream, one word at a time, so there is time to interrupt or cancel it. ", 20)

// turnCheck follows one turn and checks, once it ended, that nothing
// acknowledged was lost or stored twice, that the run did not stay running,
// and that the client's text has no gap or repeat.
type turnCheck struct {
	session, run string
	feed         *chatFeed
}

func (h *harness) startTurns(tn tenant, n int, model string) []turnCheck {
	h.t.Helper()
	var out []turnCheck
	for range n {
		s := h.session(tn, model)
		f := h.follow(tn.TenantID, s.ID, 0)
		out = append(out, turnCheck{session: s.ID, run: h.send(tn, s.ID, "stream").RunID, feed: f})
	}
	return out
}

func (h *harness) waitAllStreaming(tcs []turnCheck) {
	h.t.Helper()
	for _, tc := range tcs {
		h.waitStreaming(tc)
	}
}

func (h *harness) waitStreaming(tc turnCheck) {
	h.t.Helper()
	tc.feed.waitFor(h.t, 20*time.Second, func(ev events.ChatEvent) bool {
		p, ok := ev.Data.(events.ChatPartial)
		return ok && ev.RunID == tc.run && p.EventType == events.PartialUpdate
	})
}

func (h *harness) checkTurns(tn tenant, turns []turnCheck, want string) {
	h.t.Helper()
	for _, tc := range turns {
		evs := tc.feed.waitFor(h.t, 90*time.Second, finished(tc.run))
		h.waitRunState(tn, tc.run, events.RunCompleted)
		published := h.runEventsOnBus(tn.TenantID, tc.run)
		var stored []events.StoredEvent
		h.must(events.OpRunEvents, events.RunEvents{Caller: tn.Caller, RunID: tc.run, Limit: 1000}, &stored)
		if len(stored) != len(published)+1 {
			h.t.Errorf("run %s: stored %d events, published %d (+1 user message)", tc.run, len(stored), len(published))
		}
		seen := map[string]bool{}
		for _, ev := range stored {
			k := fmt.Sprint(ev.Epoch, "/", ev.Seq)
			if seen[k] {
				h.t.Errorf("run %s: event %s stored twice", tc.run, k)
			}
			seen[k] = true
		}
		var text strings.Builder
		for _, ev := range evs {
			if p, ok := ev.Data.(events.ChatPartial); ok && ev.RunID == tc.run {
				text.WriteString(p.DeltaText)
			}
		}
		if text.String() != want {
			h.t.Errorf("run %s: the client's text has gaps or repeats (%d of %d bytes)", tc.run, text.Len(), len(want))
		}
	}
}

func TestNATSRestartMidTurn(t *testing.T) {
	h := start(t, Config{})
	tn := newTenant()
	turns := h.startTurns(tn, 3, "scripted/slow?delay=10ms")
	h.waitAllStreaming(turns)
	if err := h.st.RestartNATS(time.Second); err != nil {
		t.Fatal(err)
	}
	h.checkTurns(tn, turns, slowText)
}

func TestPostgresRestartMidTurn(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	pg, err := privatepg.Start(ctx, privatepg.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	port := pg.Port()
	h := start(t, Config{DatabaseURL: pg.URL()})
	tn := newTenant()
	turns := h.startTurns(tn, 3, "scripted/slow?delay=10ms")
	h.waitAllStreaming(turns)
	if err := pg.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the worker streams on; streammgr cannot commit
	if pg, err = privatepg.Start(ctx, privatepg.Config{Dir: dir, Port: port}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Stop(context.Background()) })
	h.checkTurns(tn, turns, slowText)
}

func TestStreammgrKilledMidTurn(t *testing.T) {
	h := start(t, Config{NoStreammgr: true})
	first := h.spawn("streammgr")
	h.waitService("streammgr")
	tn := newTenant()
	turns := h.startTurns(tn, 3, "scripted/slow?delay=10ms")
	h.waitAllStreaming(turns)
	time.Sleep(300 * time.Millisecond)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	time.Sleep(time.Second) // the worker keeps publishing meanwhile
	h.spawn("streammgr")
	h.checkTurns(tn, turns, slowText)
}

// TestTwoStreammgrsKeepPerRunOrder runs two streammgr instances on one
// consumer: one routes at a time (pinned), so every run's events are routed
// in order; when it stops, the other takes over without a gap — also for
// the runs it dispatched itself (it served their start) while the first
// routed their events, whose memory it must not take for the truth.
func TestTwoStreammgrsKeepPerRunOrder(t *testing.T) {
	h := start(t, Config{NoStreammgr: true})
	cfg := streammgr.DefaultConfig()
	cfg.AckWait = 5 * time.Second
	var gaps atomic.Int32
	log := slog.New(&logCounter{match: "routing past a gap", n: &gaps})
	first := h.runStreammgr(cfg, log)
	h.waitService("streammgr")
	tn := newTenant()
	warm := h.startTurns(tn, 1, "scripted/hello") // the first instance is pinned: it is the only one
	h.checkTurns(tn, warm, "Hello! I am the scripted engine. I replay scenarios so you can try Clopen without any model account.")
	h.runStreammgr(cfg, log)
	turns := h.startTurns(tn, 8, "scripted/slow?delay=5ms") // their starts go to either instance
	h.waitAllStreaming(turns)
	first.Stop() // the pinned instance goes away mid-turn; the other carries on
	h.checkTurns(tn, turns, slowText)
	if n := gaps.Load(); n > 0 {
		t.Errorf("%d times a run's events were routed past a gap, after waiting for events that never came", n)
	}
}

// TestGatewayKilledMidTurn kills the gateway a WebSocket client is connected
// to; the client resumes on another gateway with its cursor and misses
// nothing.
func TestGatewayKilledMidTurn(t *testing.T) {
	h := start(t, Config{})
	ctx := context.Background()
	a := h.account("gw")
	port := freePort(t)
	victim := h.spawn("gateway", fmt.Sprintf("CLOPEN_HTTP_ADDR=127.0.0.1:%d", port))
	victimURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	waitHTTP(t, victimURL+"/healthz")
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/slow?delay=5ms"})
	if err != nil {
		t.Fatal(err)
	}
	onVictim := a.withURL(victimURL)
	ws, err := onVictim.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Join(ctx, s.ID, nil); err != nil {
		t.Fatal(err)
	}
	r, err := ws.Send(ctx, s.ID, api.SendMessage{Text: "stream"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	got := frames(t, ws, 20*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		if _, ok := ev.Data.(events.ChatPartial); ok {
			n++
		}
		return n == 50
	})
	if err := victim.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.Wait()
	cursors := eventCursors(got)
	last := cursors[len(cursors)-1]
	ws2, err := a.c.Dial(ctx) // the stack's own gateway
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	if _, err := ws2.Join(ctx, s.ID, &last); err != nil {
		t.Fatal(err)
	}
	// The session's own stream-finished (with a cursor), not the project
	// notification of it, which can arrive before the join.
	rest := frames(t, ws2, 60*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		return f.Cursor > 0 && ev.Type == events.ChatTypeStreamFinished && ev.RunID == r.RunID
	})
	me, _ := a.c.Me(ctx)
	all := h.chatSeqs(me.Tenant.ID, s.ID)
	combined := append(cursors, eventCursors(rest)...)
	if fmt.Sprint(combined) != fmt.Sprint(all) {
		t.Errorf("frames across the gateway's death (%d) differ from the session's events (%d)", len(combined), len(all))
	}
}

// TestJetStreamClusterLeaderLoss runs the system on a 3-node JetStream
// cluster with every stream and bucket at R3, and stops the EVENTS stream's
// leader in the middle of turns.
func TestJetStreamClusterLeaderLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("a 3-node cluster")
	}
	ports := []int{freePort(t), freePort(t), freePort(t)}
	routes := []int{freePort(t), freePort(t), freePort(t)}
	var urls []string
	servers := map[string]func(){}
	for i := range 3 {
		var rs []string
		for j, p := range routes {
			if j != i {
				rs = append(rs, fmt.Sprintf("nats-route://127.0.0.1:%d", p))
			}
		}
		name := fmt.Sprintf("n%d", i)
		ns, err := embeddednats.Start(embeddednats.Config{StoreDir: t.TempDir(), Port: ports[i], ServerName: name,
			Cluster: &embeddednats.ClusterConfig{Name: "clopen-test", Port: routes[i], Routes: rs}})
		if err != nil {
			t.Fatal(err)
		}
		servers[name] = func() { ns.Shutdown(); ns.WaitForShutdown() }
		t.Cleanup(servers[name])
		urls = append(urls, ns.ClientURL())
	}
	url := strings.Join(urls, ",")
	waitJetStreamReady(t, url)
	sm := streammgr.DefaultConfig()
	sm.Streams.Replicas = 3
	wc := worker.DefaultConfig()
	wc.Replicas = 3
	h := start(t, Config{NATSURL: url, Streammgr: sm, Worker: wc})
	tn := newTenant()
	turns := h.startTurns(tn, 3, "scripted/slow?delay=10ms")
	h.waitAllStreaming(turns)
	s, err := h.js.Stream(context.Background(), events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil || info.Cluster == nil || info.Cluster.Leader == "" || len(info.Cluster.Replicas) != 2 {
		t.Fatalf("EVENTS is not replicated: %+v, %v", info.Cluster, err)
	}
	t.Logf("stopping the EVENTS leader %s", info.Cluster.Leader)
	servers[info.Cluster.Leader]()
	h.checkTurns(tn, turns, slowText)
}

func waitJetStreamReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		nc, err := natsConnect(url)
		if err == nil {
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_, err = js.AccountInfo(ctx)
			cancel()
			nc.Close()
			if err == nil {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("JetStream cluster not ready")
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
