package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
)

// TestWebSocketEndToEnd runs a turn over the socket against the stub
// streammgr: the key authenticates the upgrade, the join is access-checked,
// and the turn's chat events arrive live with their cursors.
func TestWebSocketEndToEnd(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()
	e.stub.takeCalls() // forget the fixtures' calls

	c, err := a.member.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Join(ctx, a.session.ID, nil); err != nil {
		t.Fatal(err)
	}
	snap := <-c.Frames()
	if snap.Type != events.WSFrameSnapshot || snap.Payload == nil || snap.Payload.Session.ID != a.session.ID {
		t.Fatalf("first frame = %+v, want the session's snapshot", snap)
	}
	r, err := c.Send(ctx, a.session.ID, api.SendMessage{Text: "ping"})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	last := snap.Cursor
	for done := false; !done; {
		select {
		case f := <-c.Frames():
			ev, err := events.DecodeChatEvent(f.Event)
			if err != nil || f.Cursor <= last || ev.RunID != r.RunID {
				t.Fatalf("frame %+v (%v): want an event of run %s after cursor %d", f, err, r.RunID, last)
			}
			last = f.Cursor
			switch d := ev.Data.(type) {
			case events.ChatPartial:
				text.WriteString(d.DeltaText)
			case events.ChatRunState:
				done = d.State.Terminal()
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no terminal run state")
		}
	}
	if text.String() != "echo: ping" {
		t.Errorf("streamed text = %q", text.String())
	}
	for _, call := range e.stub.takeCalls() {
		if call.caller.TenantID != a.tenant.ID || call.caller.UserID != a.member.user.ID {
			t.Errorf("streammgr %s got caller %+v, want the member of acme", call.op, call.caller)
		}
	}

	// Another tenant's key, and a member outside the project, cannot join.
	for _, in := range []actor{b.admin, a.outsider} {
		cb, err := in.c.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cb.Join(ctx, a.session.ID, nil)
		wantStatus(t, "join another's session", err, http.StatusNotFound)
		_, err = cb.Send(ctx, a.session.ID, api.SendMessage{Text: "x"})
		wantStatus(t, "send to another's session", err, http.StatusNotFound)
		cb.Close()
	}
}

func TestWebSocketAuth(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	ws := strings.Replace(e.url, "http", "ws", 1) + "/v1/ws"

	_, resp, err := websocket.Dial(ctx, ws, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("dial without a key: %v, %+v; want 401 with WWW-Authenticate", err, resp)
	}
	// Browsers pass the key as ?access_token=.
	conn, _, err := websocket.Dial(ctx, ws+"?access_token="+a.member.key, nil)
	if err != nil {
		t.Fatalf("dial with access_token: %v", err)
	}
	defer conn.CloseNow()
	if err := conn.Write(ctx, websocket.MessageText, []byte(`{"id":"p","op":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	_, data, err := conn.Read(ctx)
	var f events.ServerFrame
	if err != nil || json.Unmarshal(data, &f) != nil || f.ID != "p" || f.OK == nil || !*f.OK {
		t.Errorf("ping over an access_token socket = %s, %v", data, err)
	}
}

// TestSkillsPickerOverWebSocket: skills.available by project or by session
// (whose profile it follows), refused for others' sessions and projects.
func TestSkillsPickerOverWebSocket(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()
	for _, slug := range []string{"greet", "deploy"} {
		if _, err := a.admin.c.CreateSkill(ctx, api.SkillInput{Slug: slug, Description: "The " + slug + " skill.", Body: "Do it.",
			Triggers: []string{events.SkillTriggerSlash}}); err != nil {
			t.Fatal(err)
		}
	}
	prof, err := a.admin.c.CreateProfile(ctx, api.ProfileInput{Name: "Deployer", Items: []events.ProfileItem{{Type: events.ArtifactSkill, Ref: "deploy"}}})
	if err != nil {
		t.Fatal(err)
	}
	profiled, err := a.member.c.CreateSession(ctx, a.project.ID, api.CreateSession{Title: "deploys", ProfileID: prof.ID})
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.member.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	slugs := func(av []events.AvailableSkill) []string {
		var out []string
		for _, s := range av {
			out = append(out, s.Slug)
		}
		return out
	}
	tests := []struct {
		name             string
		session, project string
		profile          *string
		want             []string
	}{
		{"the tenant", "", "", nil, []string{"deploy", "greet"}},
		{"a project", "", a.project.ID, nil, []string{"deploy", "greet"}},
		{"a project under a profile", "", a.project.ID, &prof.ID, []string{"deploy"}},
		{"a session without a profile", a.session.ID, "", nil, []string{"deploy", "greet"}},
		{"a session with a profile", profiled.ID, "", nil, []string{"deploy"}},
		{"a session, the profile overridden", profiled.ID, "", ptr(""), []string{"deploy", "greet"}},
	}
	for _, tt := range tests {
		av, err := c.AvailableSkills(ctx, tt.session, tt.project, tt.profile)
		if err != nil || !cmp.Equal(tt.want, slugs(av)) {
			t.Errorf("%s: skills.available = %v, %v; want %v", tt.name, slugs(av), err, tt.want)
		}
	}
	_, err = c.AvailableSkills(ctx, a.session.ID, a.project.ID, nil)
	wantStatus(t, "session and project", err, http.StatusBadRequest)

	for _, in := range []actor{b.admin, a.outsider} {
		cb, err := in.c.Dial(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = cb.AvailableSkills(ctx, a.session.ID, "", nil)
		wantStatus(t, "picker of another's session", err, http.StatusNotFound)
		_, err = cb.AvailableSkills(ctx, "", a.project.ID, nil)
		wantStatus(t, "picker of another's project", err, http.StatusNotFound)
		cb.Close()
	}
	// B's own picker shows none of A's skills.
	cb, err := b.member.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	if av, err := cb.AvailableSkills(ctx, b.session.ID, "", nil); err != nil || len(av) != 0 {
		t.Errorf("B's picker = %+v, %v; want empty", av, err)
	}
}

// One key, and one tenant, can hold only so many sockets at once: one more
// is refused with 429 saying why, a socket closed makes room, and other
// tenants are not affected.
func TestWebSocketCapsPerKeyAndTenant(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.WSMaxPerKey, c.WSMaxPerTenant = 2, 3 })
	a := e.newTenant(t, "acme")
	b := e.newTenant(t, "bolt")
	ctx := context.Background()
	ws := strings.Replace(e.url, "http", "ws", 1) + "/v1/ws?access_token="
	dial := func(key string) (*websocket.Conn, int, string) {
		t.Helper()
		conn, resp, err := websocket.Dial(ctx, ws+key, nil)
		if err == nil {
			t.Cleanup(func() { conn.CloseNow() })
			return conn, http.StatusSwitchingProtocols, ""
		}
		if resp == nil {
			t.Fatalf("dial: %v", err)
		}
		body, _ := io.ReadAll(resp.Body)
		return nil, resp.StatusCode, string(body)
	}
	m1, _, _ := dial(a.member.key)
	if _, code, _ := dial(a.member.key); code != http.StatusSwitchingProtocols {
		t.Fatalf("second socket of a key: %d", code)
	}
	if _, code, body := dial(a.member.key); code != http.StatusTooManyRequests || !strings.Contains(body, "API key has 2 WebSockets open") {
		t.Errorf("third socket of a key = %d %s, want 429 naming the key's limit", code, body)
	}
	if _, code, _ := dial(a.admin.key); code != http.StatusSwitchingProtocols {
		t.Fatalf("another key of the tenant: %d", code)
	}
	if _, code, body := dial(a.admin.key); code != http.StatusTooManyRequests || !strings.Contains(body, "tenant has 3 WebSockets open") {
		t.Errorf("fourth socket of a tenant = %d %s, want 429 naming the tenant's limit", code, body)
	}
	if _, code, _ := dial(b.member.key); code != http.StatusSwitchingProtocols {
		t.Errorf("another tenant's socket: %d, want it open", code)
	}
	m1.Close(websocket.StatusNormalClosure, "")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, code, _ := dial(a.member.key)
		if code == http.StatusSwitchingProtocols {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a closed socket did not make room: still %d", code)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
