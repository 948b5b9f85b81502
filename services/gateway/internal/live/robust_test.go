package live

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"clopen.dev/pkg/events"
)

// rawConn is a WebSocket client that sends whatever bytes a test gives.
func rawConn(t *testing.T, e *wsEnv) *websocket.Conn {
	t.Helper()
	ws, _, err := websocket.Dial(context.Background(), e.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(64 << 20)
	t.Cleanup(func() { _ = ws.CloseNow() })
	return ws
}

func readFrameJSON(t *testing.T, ws *websocket.Conn) events.ServerFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var f events.ServerFrame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return f
}

func TestMalformedFramesKeepTheConnectionUsable(t *testing.T) {
	e := newWSEnv(t, Config{ReadLimit: 1024}, "member")
	ws := rawConn(t, e)
	ctx := context.Background()
	tests := []struct {
		name     string
		give     string
		binary   bool
		wantID   string
		wantCode string
		wantMsg  string
	}{
		{"not JSON", `hello`, false, "", "invalid_request", "malformed frame"},
		{"not an object", `[1,2]`, false, "", "invalid_request", "malformed frame"},
		{"wrong field type keeps the id", `{"id":"a1","op":"join","session":"s1","cursor":"x"}`, false, "a1", "invalid_request", `field "cursor"`},
		{"unknown op", `{"id":"a2","op":"dance"}`, false, "a2", "invalid_request", "unknown op"},
		{"missing op", `{"id":"a3"}`, false, "a3", "invalid_request", "op: missing"},
		{"missing session", `{"id":"a4","op":"join"}`, false, "a4", "invalid_request", "session: missing"},
		{"session with a dot", `{"id":"a5","op":"join","session":"s1.>"}`, false, "a5", "invalid_request", "session"},
		{"bad run id", `{"id":"a6","op":"cancel","session":"s1","run":"r 1"}`, false, "a6", "invalid_request", "run"},
		{"prompt not an array", `{"id":"a7","op":"send","session":"s1","prompt":"x"}`, false, "a7", "invalid_request", "prompt"},
		{"send with nothing", `{"id":"a8","op":"send","session":"s1"}`, false, "a8", "invalid_request", "text or prompt"},
		{"answer without tool use", `{"id":"a9","op":"answer","session":"s1","decision":"allow"}`, false, "a9", "invalid_request", "toolUseId"},
		{"bad decision", `{"id":"a10","op":"answer","session":"s1","toolUseId":"t","decision":"maybe"}`, false, "a10", "invalid_request", "decision"},
		{"id too long", `{"id":"` + strings.Repeat("i", 200) + `","op":"ping"}`, false, "", "invalid_request", "id"},
		{"oversize frame", `{"id":"big","op":"send","session":"s1","text":"` + strings.Repeat("x", 4000) + `"}`, false, "", "too_large", "1024"},
		{"binary frame", `{"id":"b1","op":"ping"}`, true, "", "invalid_request", "binary"},
		{"session of nobody", `{"id":"n1","op":"join","session":"elsewhere"}`, false, "n1", "not_found", "not found"},
		{"prompt text too large", `{"id":"p1","op":"send","session":"s1","text":"` + strings.Repeat("x", 900) + `"}`, false, "p1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ := websocket.MessageText
			if tt.binary {
				typ = websocket.MessageBinary
			}
			if err := ws.Write(ctx, typ, []byte(tt.give)); err != nil {
				t.Fatal(err)
			}
			f := readFrameJSON(t, ws)
			if tt.wantCode == "" { // accepted
				if f.Type != events.WSFrameReply || f.ID != tt.wantID || f.OK == nil || !*f.OK {
					t.Errorf("reply = %+v, want ok for %s", f, tt.wantID)
				}
				return
			}
			if f.Type != events.WSFrameReply || f.ID != tt.wantID || f.OK == nil || *f.OK || f.Error == nil ||
				f.Error.Code != tt.wantCode || !strings.Contains(f.Error.Message, tt.wantMsg) {
				t.Errorf("reply = %+v (error %+v), want id %q, %s containing %q", f, f.Error, tt.wantID, tt.wantCode, tt.wantMsg)
			}
		})
	}
	// Still usable.
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":"last","op":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if f := readFrameJSON(t, ws); f.ID != "last" || f.OK == nil || !*f.OK {
		t.Errorf("ping after the garbage = %+v", f)
	}
}

func TestSlowConsumerGetsByeWithItsCursor(t *testing.T) {
	const queue = 16
	e := newWSEnv(t, Config{QueueSize: queue, SlowGrace: time.Second, PingInterval: time.Hour}, "member")
	ctx := context.Background()
	ws := rawConn(t, e)
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"id":"j","op":"join","session":"s1","cursor":0}`)); err != nil {
		t.Fatal(err)
	}
	if f := readFrameJSON(t, ws); f.ID != "j" || !*f.OK {
		t.Fatalf("join reply = %+v", f)
	}
	// Far more than the socket buffers and the queue hold, while the client
	// reads nothing.
	seqs := e.publish(t, "s1", 3000, strings.Repeat("x", 4096))
	deadline := time.Now().Add(20 * time.Second)
	for e.hub.Stats().SlowConsumers == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no slow consumer detected; stats %+v", e.hub.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := e.hub.Stats().MaxQueueDepth; d > queue {
		t.Errorf("outbound queue reached %d frames, bound %d", d, queue)
	}
	var got []uint64
	var bye events.ServerFrame
	for {
		f := readFrameJSON(t, ws)
		if f.Type == events.WSFrameBye {
			bye = f
			break
		}
		got = append(got, f.Cursor)
	}
	if len(got) == 0 || len(got) >= len(seqs) || !eq(got, seqs[:len(got)]) {
		t.Fatalf("before bye got %d frames, want a proper prefix of the %d published, in order", len(got), len(seqs))
	}
	if bye.Reason != "slow consumer" || bye.Session != "s1" || bye.Cursor != got[len(got)-1] {
		t.Errorf("bye = %+v, want slow consumer at cursor %d of s1", bye, got[len(got)-1])
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, _, err := ws.Read(rctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("after bye: %v, want close status policy violation", err)
	}

	// The bye cursor resumes exactly where the client stopped.
	c := e.dial(t)
	if _, err := c.Join(ctx, "s1", &bye.Cursor); err != nil {
		t.Fatal(err)
	}
	rest := seqs[len(got):]
	if gotRest := cursors(t, frames(t, c, len(rest)), "s1"); !eq(gotRest, rest) {
		t.Errorf("resume after bye: %d frames from %d, want %d from %d", len(gotRest), gotRest[0], len(rest), rest[0])
	}
	if d := e.hub.Stats().MaxQueueDepth; d > queue {
		t.Errorf("outbound queue reached %d frames, bound %d", d, queue)
	}
}

func TestNotificationsSkipTheJoinedSession(t *testing.T) {
	for _, role := range []string{"member", "admin"} {
		t.Run(role, func(t *testing.T) {
			e := newWSEnv(t, Config{}, role)
			ctx := context.Background()
			c := e.dial(t)
			if _, err := c.Join(ctx, "s1", ptr(uint64(0))); err != nil {
				t.Fatal(err)
			}
			if err := c.Ping(ctx); err != nil { // the subscriptions are in place before any reply
				t.Fatal(err)
			}
			notify := func(session string) {
				ev := events.ChatEvent{Type: events.ChatTypeStreamFinished, ChatSessionID: session, ProjectID: "p1", Timestamp: time.Now().UTC(),
					Data: events.ChatStreamFinished{ProjectID: "p1", ChatSessionID: session, Status: events.FinishCompleted}}
				b, _ := json.Marshal(ev)
				subject, _ := events.NotifySubject(tenant, "p1")
				if err := e.nc.Publish(subject, b); err != nil {
					t.Fatal(err)
				}
				if err := e.nc.Publish("notify.other-tenant.p1", b); err != nil {
					t.Fatal(err)
				}
			}
			notify("s1") // the joined session: arrives through CHAT, not here
			notify("s2")
			f := frames(t, c, 1)[0]
			if f.Type != events.WSFrameEvent || f.Session != "s2" || f.Cursor != 0 {
				t.Fatalf("frame = %+v, want s2's notification without a cursor", f)
			}
			noFrame(t, c, 150*time.Millisecond)
		})
	}
}

func TestCommandsReachStreammgr(t *testing.T) {
	e := newWSEnv(t, Config{MaxPromptBytes: 100}, "member")
	ctx := context.Background()
	c := e.dial(t)
	r, err := c.Send(ctx, "s1", sendText("hello"))
	if err != nil || r.RunID != "run-1" {
		t.Fatalf("Send = %+v, %v", r, err)
	}
	if sent := e.chats.sentTurns(); len(sent) != 1 || sent[0].SessionID != "s1" {
		t.Errorf("sent turns = %+v", sent)
	}
	if ack, err := c.Cancel(ctx, "s1", ""); err != nil || !strings.Contains(string(ack), "cancelling") {
		t.Errorf("Cancel = %s, %v", ack, err)
	}
	if _, err := c.Interrupt(ctx, "s1", "run-1"); err != nil {
		t.Errorf("Interrupt: %v", err)
	}
	_, err = c.Send(ctx, "s1", sendText(strings.Repeat("x", 101)))
	var apiErr *events.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != "too_large" {
		t.Errorf("oversize prompt: %v, want too_large", err)
	}
	_, err = c.Send(ctx, "elsewhere", sendText("hi"))
	if !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Errorf("send to a foreign session: %v, want 404", err)
	}
}

func TestShutdownSaysByeWithTheCursor(t *testing.T) {
	e := newWSEnv(t, Config{}, "member")
	ctx := context.Background()
	c := e.dial(t)
	if _, err := c.Join(ctx, "s1", ptr(uint64(0))); err != nil {
		t.Fatal(err)
	}
	seqs := e.publish(t, "s1", 3, "x")
	frames(t, c, 3)
	e.hub.Close(time.Second)
	f := frames(t, c, 1)[0]
	if f.Type != events.WSFrameBye || f.Reason != reasonShutdown || f.Cursor != seqs[2] {
		t.Errorf("frame = %+v, want bye at cursor %d", f, seqs[2])
	}
}
