package live

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/gateway/internal/chats"
	"clopen.dev/services/gateway/internal/identity"
)

const tenant = "t1"

// fakeChats answers for sessions s1, s2 and s3 of project p1 in tenant t1;
// every other session is not found. Snapshots carry CHAT's last sequence.
type fakeChats struct {
	js jetstream.JetStream

	mu        sync.Mutex
	snapshots int
	sent      []chats.Turn
}

func (f *fakeChats) Session(_ context.Context, p identity.Principal, id string) (events.Session, error) {
	if p.TenantID != tenant || (id != "s1" && id != "s2" && id != "s3") {
		return events.Session{}, svc.NotFound("session %s not found", id)
	}
	return events.Session{ID: id, ProjectID: "p1"}, nil
}

func (f *fakeChats) Snapshot(ctx context.Context, p identity.Principal, id string) (events.Snapshot, error) {
	s, err := f.Session(ctx, p, id)
	if err != nil {
		return events.Snapshot{}, err
	}
	st, err := f.js.Stream(ctx, events.StreamChat)
	if err != nil {
		return events.Snapshot{}, err
	}
	info, err := st.Info(ctx)
	if err != nil {
		return events.Snapshot{}, err
	}
	f.mu.Lock()
	f.snapshots++
	f.mu.Unlock()
	return events.Snapshot{Session: s, Cursor: info.State.LastSeq, PartialText: "so far"}, nil
}

func (f *fakeChats) Send(ctx context.Context, p identity.Principal, t chats.Turn) (events.StartTurnReply, error) {
	if _, err := f.Session(ctx, p, t.SessionID); err != nil {
		return events.StartTurnReply{}, err
	}
	f.mu.Lock()
	f.sent = append(f.sent, t)
	f.mu.Unlock()
	return events.StartTurnReply{RunID: "run-1"}, nil
}

func (f *fakeChats) Cancel(ctx context.Context, p identity.Principal, session, _ string) (json.RawMessage, error) {
	_, err := f.Session(ctx, p, session)
	return json.RawMessage(`{"accepted":true,"state":"cancelling"}`), err
}

func (f *fakeChats) Interrupt(ctx context.Context, p identity.Principal, session, run string) (json.RawMessage, error) {
	return f.Cancel(ctx, p, session, run)
}

func (f *fakeChats) Answer(ctx context.Context, p identity.Principal, session string, _ api.Answer) (json.RawMessage, error) {
	return f.Cancel(ctx, p, session, "")
}

func (f *fakeChats) sentTurns() []chats.Turn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chats.Turn(nil), f.sent...)
}

func (f *fakeChats) snapshotCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snapshots
}

type fakeProjects struct{}

func (fakeProjects) ListProjects(context.Context, identity.Principal) ([]api.Project, error) {
	return []api.Project{{ID: "p1"}}, nil
}

type allowAll struct{}

func (allowAll) Allow(string) error { return nil }

// wsEnv is a hub on a real JetStream, served over HTTP to one principal.
type wsEnv struct {
	hub   *Hub
	url   string
	nc    *nats.Conn
	js    jetstream.JetStream
	chats *fakeChats
}

func newWSEnv(t *testing.T, cfg Config, role string) *wsEnv {
	t.Helper()
	ns := natstest.Start(t)
	nc, js := natstest.Connect(t, ns)
	_, err := js.CreateOrUpdateStream(context.Background(), jetstream.StreamConfig{
		Name: events.StreamChat, Subjects: []string{events.SubjectChatAll}, Retention: jetstream.LimitsPolicy,
		Storage: jetstream.FileStorage, MaxAge: 24 * time.Hour, Duplicates: 2 * time.Minute, AllowDirect: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	fc := &fakeChats{js: js}
	hub, err := New(cfg, Deps{NATS: nc, Chats: fc, Projects: fakeProjects{}, Limiter: allowAll{}, Logger: logging.Discard()})
	if err != nil {
		t.Fatal(err)
	}
	p := identity.Principal{TenantID: tenant, UserID: "u1", Role: role, KeyID: "k1"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hub.ServeWS(w, r, p) }))
	t.Cleanup(func() {
		hub.Close(time.Second)
		srv.Close()
	})
	return &wsEnv{hub: hub, url: srv.URL, nc: nc, js: js, chats: fc}
}

func (e *wsEnv) dial(t *testing.T) *client.Conn {
	t.Helper()
	c, err := client.New(e.url, "unused").Dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// publish stores n chat events of session on CHAT and returns their
// sequences.
func (e *wsEnv) publish(t *testing.T, session string, n int, delta string) []uint64 {
	t.Helper()
	subject, _ := events.ChatSubject(tenant, session)
	var seqs []uint64
	for i := range n {
		ev := events.ChatEvent{Type: events.ChatTypePartial, ChatSessionID: session, ProjectID: "p1", Timestamp: time.Now().UTC(),
			Data: events.ChatPartial{EventType: events.PartialUpdate, DeltaText: fmt.Sprintf("%s%d", delta, i)}}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		ack, err := e.js.Publish(context.Background(), subject, b)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	return seqs
}

// frames reads n frames from c, failing after a timeout.
func frames(t *testing.T, c *client.Conn, n int) []events.ServerFrame {
	t.Helper()
	var out []events.ServerFrame
	timeout := time.After(10 * time.Second)
	for len(out) < n {
		select {
		case f, ok := <-c.Frames():
			if !ok {
				t.Fatalf("connection ended after %d of %d frames: %v", len(out), n, c.Err())
			}
			out = append(out, f)
		case <-timeout:
			t.Fatalf("got %d of %d frames", len(out), n)
		}
	}
	return out
}

// noFrame fails if a frame arrives within d.
func noFrame(t *testing.T, c *client.Conn, d time.Duration) {
	t.Helper()
	select {
	case f := <-c.Frames():
		t.Fatalf("unexpected frame %+v", f)
	case <-time.After(d):
	}
}

// cursors returns the cursors of event frames, checking each is an event
// of session.
func cursors(t *testing.T, fs []events.ServerFrame, session string) []uint64 {
	t.Helper()
	var out []uint64
	for _, f := range fs {
		if f.Type != events.WSFrameEvent || f.Session != session {
			t.Fatalf("frame %+v, want an event of %s", f, session)
		}
		if _, err := events.DecodeChatEvent(f.Event); err != nil {
			t.Fatalf("event frame does not carry a chat event: %v", err)
		}
		out = append(out, f.Cursor)
	}
	return out
}

func eq(a, b []uint64) bool { return fmt.Sprint(a) == fmt.Sprint(b) }

func ptr[T any](v T) *T { return &v }

func sendText(s string) api.SendMessage { return api.SendMessage{Text: s} }
