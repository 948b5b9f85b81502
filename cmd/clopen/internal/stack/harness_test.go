package stack

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/busauth"
	"clopen.dev/pkg/platform/bustoken/bustokentest"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/pkg/platform/svc"
	worker "clopen.dev/services/engine-worker"
)

// harness is a running stack plus a client connection to its bus.
type harness struct {
	t     *testing.T
	st    *Stack
	dbURL string
	nc    *nats.Conn
	js    jetstream.JetStream
}

func start(t *testing.T, cfg Config) *harness {
	t.Helper()
	if cfg.DatabaseURL == "" {
		cfg.DatabaseURL = pgtest.NewURL(t)
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	if cfg.Logger == nil && os.Getenv("CLOPEN_TEST_LOG") != "" {
		cfg.Logger = logging.New(os.Stderr, os.Getenv("CLOPEN_TEST_LOG"))
	}
	if reflect.ValueOf(cfg.Worker).IsZero() {
		cfg.Worker = worker.DefaultConfig()
		cfg.Worker.Workspaces = cfg.Dir
	}
	ctx := context.Background()
	st, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := st.Stop(); err != nil {
			t.Errorf("stack stopped with: %v", err)
		}
	})
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := st.Ready(rctx); err != nil {
		t.Fatal(err)
	}
	nc, err := st.Connect(busauth.Operator, "clopen-test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	h := &harness{t: t, st: st, nc: nc, js: js, dbURL: cfg.DatabaseURL}
	if !cfg.NoWorkers {
		h.waitWorkers(max(cfg.Workers, 1))
	}
	return h
}

// withScenarios is the default worker configuration working in dir, with
// the scripted engine's extra scenarios (name -> JSON) in dir/scenarios.
func withScenarios(t *testing.T, dir string, scenarios map[string]string) worker.Config {
	t.Helper()
	sd := filepath.Join(dir, "scenarios")
	if err := os.MkdirAll(sd, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, sc := range scenarios {
		if err := os.WriteFile(filepath.Join(sd, name+".json"), []byte(sc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := worker.DefaultConfig()
	cfg.Workspaces, cfg.ScenarioDir = dir, sd
	return cfg
}

// waitWorkers waits until n workers advertise themselves. A worker spawned
// as a process of a race-instrumented binary on a busy machine can take many
// seconds to start, hence the generous deadline; it returns as soon as they do.
func (h *harness) waitWorkers(n int) {
	h.t.Helper()
	if n == 0 {
		return
	}
	deadline := time.Now().Add(45 * time.Second)
	var keys []string
	for time.Now().Before(deadline) {
		if kv, err := h.js.KeyValue(context.Background(), events.BucketWorkers); err == nil {
			if keys, _ = kv.Keys(context.Background()); len(keys) >= n {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	h.t.Fatalf("%d workers advertised (%v), want %d", len(keys), keys, n)
}

// connect opens another client connection to the stack's bus.
func (h *harness) connect() *nats.Conn {
	h.t.Helper()
	nc, err := h.st.Connect(busauth.Operator, "clopen-test")
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(nc.Close)
	return nc
}

// waitService waits until a micro service serves all its endpoints.
func (h *harness) waitService(name string) {
	h.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if natstest.ServiceReady(h.nc, name) {
			return
		}
	}
	h.t.Fatalf("service %s not up", name)
}

// tenant is a caller of a fresh tenant with a project.
type tenant struct {
	events.Caller
	project string
}

func newTenant() tenant {
	return tenant{Caller: events.Caller{TenantID: uuid.NewString(), UserID: uuid.NewString(), UserName: "ada", Role: "admin"},
		project: uuid.NewString()}
}

func (h *harness) call(op string, req, resp any) error {
	subject, _ := events.ServiceSubject("streammgr", op)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return svc.Call(h.as(ctx, req), h.nc, subject, req, resp)
}

// as returns ctx whose calls carry the caller token the gateway would sign
// for the caller req embeds.
func (h *harness) as(ctx context.Context, req any) context.Context {
	h.t.Helper()
	return bustokentest.AsCaller(h.t, ctx, h.st.Keys, req)
}

func (h *harness) must(op string, req, resp any) {
	h.t.Helper()
	if err := h.call(op, req, resp); err != nil {
		h.t.Fatalf("%s: %v", op, err)
	}
}

func (h *harness) session(tn tenant, model string) events.Session {
	h.t.Helper()
	var s events.Session
	h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project, Model: model}, &s)
	return s
}

func (h *harness) send(tn tenant, session, text string) events.StartTurnReply {
	h.t.Helper()
	var r events.StartTurnReply
	h.must(events.OpStart, events.StartTurnRequest{Caller: tn.Caller, SessionID: session,
		Prompt: []events.Block{events.TextBlock{Text: text}}}, &r)
	return r
}

// chatFeed follows a session's CHAT subject from the beginning.
type chatFeed struct {
	mu     sync.Mutex
	evs    []events.ChatEvent
	seqs   []uint64
	notify chan struct{}
	cc     jetstream.ConsumeContext
}

func (h *harness) follow(tenant, session string, from uint64) *chatFeed {
	h.t.Helper()
	subject, _ := events.ChatSubject(tenant, session)
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}}
	if from > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	c, err := h.js.OrderedConsumer(context.Background(), events.StreamChat, cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	f := &chatFeed{notify: make(chan struct{}, 1)}
	f.cc, err = c.Consume(func(m jetstream.Msg) {
		ev, err := events.DecodeChatEvent(m.Data())
		if err != nil {
			h.t.Errorf("undecodable chat event: %v", err)
			return
		}
		meta, _ := m.Metadata()
		f.mu.Lock()
		f.evs = append(f.evs, ev)
		f.seqs = append(f.seqs, meta.Sequence.Stream)
		f.mu.Unlock()
		select {
		case f.notify <- struct{}{}:
		default:
		}
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(f.cc.Stop)
	return f
}

// waitFor waits until an event satisfies match and returns every event so far.
func (f *chatFeed) waitFor(t *testing.T, d time.Duration, match func(events.ChatEvent) bool) []events.ChatEvent {
	t.Helper()
	deadline := time.After(d)
	for {
		f.mu.Lock()
		for _, ev := range f.evs {
			if match(ev) {
				out := append([]events.ChatEvent(nil), f.evs...)
				f.mu.Unlock()
				return out
			}
		}
		f.mu.Unlock()
		select {
		case <-f.notify:
		case <-deadline:
			f.mu.Lock()
			defer f.mu.Unlock()
			t.Fatalf("timed out; events so far: %s", summarize(f.evs))
		}
	}
}

func finished(run string) func(events.ChatEvent) bool {
	return func(ev events.ChatEvent) bool { return ev.Type == events.ChatTypeStreamFinished && ev.RunID == run }
}

func runState(run string, s events.RunStateName) func(events.ChatEvent) bool {
	return func(ev events.ChatEvent) bool {
		rs, ok := ev.Data.(events.ChatRunState)
		return ok && ev.RunID == run && rs.State == s
	}
}

func summarize(evs []events.ChatEvent) string {
	b, _ := json.Marshal(types(evs))
	return string(b)
}

func types(evs []events.ChatEvent) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		t := string(ev.Type)
		switch d := ev.Data.(type) {
		case events.ChatPartial:
			t += ":" + string(d.EventType)
		case events.ChatRunState:
			t += ":" + string(d.State)
		case events.ChatMessage:
			t += ":" + d.Message.OutputType()
		}
		out = append(out, t)
	}
	return out
}

func natsConnect(url string) (*nats.Conn, error) { return nats.Connect(url) }

// waitHTTP waits until url answers 200.
func waitHTTP(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not answering", url)
}
