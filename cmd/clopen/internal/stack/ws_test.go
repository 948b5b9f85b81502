package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// account is a tenant's admin with an API key and a project, as a client.
type account struct {
	c       *client.Client
	key     string
	project api.Project
}

func (h *harness) account(slug string) account {
	h.t.Helper()
	ctx := context.Background()
	if _, err := gateway.CreateTenant(ctx, h.st.DB, slug, slug); err != nil {
		h.t.Fatal(err)
	}
	if _, err := gateway.CreateUser(ctx, h.st.DB, slug, api.CreateUser{Email: "admin@" + slug, Name: "Admin", Role: "admin"}); err != nil {
		h.t.Fatal(err)
	}
	key, err := gateway.CreateKey(ctx, h.st.DB, slug, "admin@"+slug, "test")
	if err != nil {
		h.t.Fatal(err)
	}
	c := client.New(h.st.URL, key.Key)
	p, err := c.CreateProject(ctx, api.CreateProject{Name: "main"})
	if err != nil {
		h.t.Fatal(err)
	}
	return account{c: c, key: key.Key, project: p}
}

// withURL is the same account talking to another gateway.
func (a account) withURL(url string) *client.Client { return client.New(url, a.key) }

// frames reads a connection's event frames until match says stop.
func frames(t *testing.T, cn *client.Conn, d time.Duration, stop func(events.ServerFrame, events.ChatEvent) bool) []events.ServerFrame {
	t.Helper()
	var out []events.ServerFrame
	deadline := time.After(d)
	for {
		select {
		case f, ok := <-cn.Frames():
			if !ok {
				t.Fatalf("connection closed after %d frames: %v", len(out), cn.Err())
			}
			out = append(out, f)
			var ev events.ChatEvent
			if f.Type == events.WSFrameEvent {
				ev, _ = events.DecodeChatEvent(f.Event)
			}
			if stop(f, ev) {
				return out
			}
		case <-deadline:
			t.Fatalf("timed out after %d frames", len(out))
		}
	}
}

func eventCursors(fs []events.ServerFrame) []uint64 {
	var out []uint64
	for _, f := range fs {
		if f.Type == events.WSFrameEvent && f.Cursor > 0 {
			out = append(out, f.Cursor)
		}
	}
	return out
}

// chatSeqs returns the CHAT sequences of every event of a session.
func (h *harness) chatSeqs(tenant, session string) []uint64 {
	h.t.Helper()
	subject, _ := events.ChatSubject(tenant, session)
	ctx := context.Background()
	s, _ := h.js.Stream(ctx, events.StreamChat)
	info, _ := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	n := info.State.Subjects[subject]
	c, err := h.js.OrderedConsumer(ctx, events.StreamChat, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []uint64
	for uint64(len(out)) < n {
		m, err := c.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			h.t.Fatal(err)
		}
		meta, _ := m.Metadata()
		out = append(out, meta.Sequence.Stream)
	}
	return out
}

// describeChat lists CHAT messages by sequence with their type and run, for
// a failure message.
func (h *harness) describeChat(seqs []uint64) string {
	stream, err := h.js.Stream(context.Background(), events.StreamChat)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, seq := range seqs {
		m, err := stream.GetMsg(context.Background(), seq)
		if err != nil {
			fmt.Fprintf(&b, "%d:%v ", seq, err)
			continue
		}
		ev, err := events.DecodeChatEvent(m.Data)
		if err != nil {
			fmt.Fprintf(&b, "%d:undecodable ", seq)
			continue
		}
		kind := string(ev.Type)
		if p, ok := ev.Data.(events.ChatPartial); ok {
			kind += "/" + string(p.EventType)
		}
		fmt.Fprintf(&b, "%d:%s ", seq, kind)
	}
	return b.String()
}

func TestWebSocketTurnResumeAndReload(t *testing.T) {
	h := start(t, Config{})
	ctx := context.Background()
	a := h.account("acme")
	me, _ := a.c.Me(ctx)
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/slow?delay=3ms"})
	if err != nil {
		t.Fatal(err)
	}
	ws1, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws1.Join(ctx, s.ID, nil); err != nil {
		t.Fatal(err)
	}
	reply, err := ws1.Send(ctx, s.ID, api.SendMessage{Text: "tell me a long story"})
	if err != nil {
		t.Fatal(err)
	}
	// Read part of the turn, then drop the connection. The worker coalesces
	// deltas 30 ms apart, so this turn (400 deltas 3 ms apart) streams about
	// 40 updates in all, fewer on a fast run: wait for well under that.
	updates := 0
	first := frames(t, ws1, 20*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		if p, ok := ev.Data.(events.ChatPartial); ok && p.EventType == events.PartialUpdate {
			updates++
		}
		return updates == 15
	})
	ws1.Close()
	seen := eventCursors(first)
	last := seen[len(seen)-1]

	// Reconnect with the cursor: exactly what was missed, then live.
	ws2, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws2.Close()
	if _, err := ws2.Join(ctx, s.ID, &last); err != nil {
		t.Fatal(err)
	}
	// The session's own stream-finished, which carries a cursor: on a loaded
	// machine the run may end between the dial and the join, and the
	// project notification of it (no cursor) reaches the connection first.
	rest := frames(t, ws2, 30*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		return f.Cursor > 0 && ev.Type == events.ChatTypeStreamFinished && ev.RunID == reply.RunID
	})
	for _, f := range rest {
		if f.Type == events.WSFrameSnapshot {
			t.Fatal("a resume with a current cursor got a snapshot")
		}
	}
	got := append(seen, eventCursors(rest)...)
	all := h.chatSeqs(me.Tenant.ID, s.ID)
	if fmt.Sprint(got) != fmt.Sprint(all[:min(len(got), len(all))]) || len(got) != len(all) {
		var after []string
		for _, f := range rest {
			after = append(after, fmt.Sprintf("%s@%d:%.60s", f.Type, f.Cursor, f.Event))
		}
		t.Fatalf("frames across the reconnect (%d) differ from the session's events (%d): a gap or a duplicate\n got %v\n all %s\n after the reconnect %v",
			len(got), len(all), got, h.describeChat(all), after)
	}

	// After the turn: the old cursor gets the rest, and nothing else.
	ws3, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws3.Close()
	if _, err := ws3.Join(ctx, s.ID, &last); err != nil {
		t.Fatal(err)
	}
	again := frames(t, ws3, 10*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		return f.Cursor > 0 && ev.Type == events.ChatTypeStreamFinished
	})
	if fmt.Sprint(eventCursors(again)) != fmt.Sprint(eventCursors(rest)) {
		t.Error("rejoining after the turn ended did not deliver exactly the rest")
	}

	// A cursor older than the buffer: reload with a snapshot.
	stream, _ := h.js.Stream(ctx, events.StreamChat)
	if err := stream.Purge(ctx, jetstream.WithPurgeSequence(last+1)); err != nil {
		t.Fatal(err)
	}
	stale := seen[0]
	ws4, err := a.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws4.Close()
	if _, err := ws4.Join(ctx, s.ID, &stale); err != nil {
		t.Fatal(err)
	}
	snapFrames := frames(t, ws4, 10*time.Second, func(f events.ServerFrame, ev events.ChatEvent) bool {
		return f.Type == events.WSFrameSnapshot
	})
	snap := snapFrames[len(snapFrames)-1]
	if !snap.Reload || snap.Payload == nil {
		t.Fatalf("stale cursor got %+v, want a reload snapshot", snap)
	}
	msgs, err := a.c.Messages(ctx, s.ID, "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Payload.Messages) != len(msgs.Messages) || snap.Payload.Cursor == 0 {
		t.Errorf("snapshot has %d messages (cursor %d), the session %d", len(snap.Payload.Messages), snap.Payload.Cursor, len(msgs.Messages))
	}
}

func TestRESTAndWebSocketRefuseAnotherTenant(t *testing.T) {
	h := start(t, Config{})
	ctx := context.Background()
	a, b := h.account("alpha"), h.account("beta")
	s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/ask"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	notFound := func(what string, err error) {
		t.Helper()
		var ae *events.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
			t.Errorf("%s as another tenant: %v, want 404", what, err)
		}
	}
	_, err = b.c.Session(ctx, s.ID)
	notFound("GET session", err)
	_, err = b.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "intrude"})
	notFound("send", err)
	_, err = b.c.Cancel(ctx, s.ID, r.RunID)
	notFound("cancel", err)
	_, err = b.c.Interrupt(ctx, s.ID, "")
	notFound("interrupt", err)
	_, err = b.c.Answer(ctx, s.ID, api.Answer{ToolUseID: "x", Answers: map[string]string{"q": "a"}})
	notFound("answer", err)
	_, err = b.c.Run(ctx, r.RunID)
	notFound("GET run", err)
	_, err = b.c.RunEvents(ctx, r.RunID, 0, 0, 10)
	notFound("run events", err)
	_, err = b.c.Messages(ctx, s.ID, "", 10)
	notFound("messages", err)
	_, err = b.c.Snapshot(ctx, s.ID)
	notFound("snapshot", err)
	_, err = b.c.Sessions(ctx, a.project.ID, 10)
	notFound("list project sessions", err)
	err = b.c.DeleteSession(ctx, s.ID)
	notFound("delete session", err)

	ws, err := b.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	_, err = ws.Join(ctx, s.ID, nil)
	notFound("ws join", err)
	_, err = ws.Send(ctx, s.ID, api.SendMessage{Text: "intrude"})
	notFound("ws send", err)
	_, err = ws.Cancel(ctx, s.ID, r.RunID)
	notFound("ws cancel", err)
	_, err = ws.Answer(ctx, s.ID, api.Answer{ToolUseID: "x", Answers: map[string]string{"q": "a"}})
	notFound("ws answer", err)
	if err := ws.Ping(ctx); err != nil {
		t.Errorf("connection unusable after refusals: %v", err)
	}
	// A's run was not touched.
	run, err := a.c.Run(ctx, r.RunID)
	if err != nil || run.State.Terminal() {
		t.Errorf("A's run = %+v, %v; want it still running", run, err)
	}
}

func TestWebSocketBadInputKeepsTheConnection(t *testing.T) {
	gc := gateway.DefaultConfig()
	gc.MaxPromptBytes = 1000
	h := start(t, Config{Gateway: &gc})
	ctx := context.Background()
	a := h.account("gamma")
	s, _ := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{})
	url := strings.Replace(h.st.URL, "http", "ws", 1) + "/v1/ws"
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + a.key}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	ask := func(frame string) events.ServerFrame {
		t.Helper()
		if err := conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatalf("write: %v", err)
		}
		for {
			_, b, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("read after %s: %v", frame, err)
			}
			var f events.ServerFrame
			if json.Unmarshal(b, &f) == nil && f.Type == events.WSFrameReply {
				return f
			}
		}
	}
	for _, bad := range []string{
		`{not json`,
		`{"id":"1","op":"fly"}`,
		`{"id":"2","op":"join","session":"../../etc"}`,
		`{"id":"3","op":"send","session":"` + s.ID + `","text":"` + strings.Repeat("x", 2000) + `"}`,
		`{"id":"4","op":"answer","session":"` + s.ID + `"}`,
		`{"id":"5","op":"send","session":"` + s.ID + `","prompt":[{"type":"tool_use","id":"x","name":"Bash"}]}`,
	} {
		f := ask(bad)
		if f.OK == nil || *f.OK || f.Error == nil || f.Error.Message == "" {
			t.Errorf("frame %.60s got %+v, want a clear error", bad, f)
		}
	}
	if f := ask(`{"id":"9","op":"ping"}`); f.OK == nil || !*f.OK {
		t.Errorf("ping after bad frames = %+v", f)
	}
}
