package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
)

// TestNULIsRefusedNamingTheField: Postgres cannot store U+0000, so a string
// holding it is a 400 naming the field, over REST and over the socket, not
// a 500 from a failed insert, and nothing is stored.
func TestNULIsRefusedNamingTheField(t *testing.T) {
	e := newEnv(t, nil)
	a := e.newTenant(t, "acme")
	ctx := context.Background()
	session := "/v1/sessions/" + a.session.ID
	project := "/v1/projects/" + a.project.ID

	tests := []struct {
		method, path string
		give         string
		wantField    string
	}{
		{"POST", session + "/messages", `{"text":"hello\u0000"}`, "text"},
		{"POST", session + "/messages", `{"prompt":[{"type":"text","text":"ok"},{"type":"text","text":"\u0000"}]}`, "prompt[1].text"},
		{"POST", "/v1/projects", `{"name":"a\u0000b"}`, "name"},
		{"PATCH", project, `{"name":"a\u0000b"}`, "name"},
		{"POST", project + "/sessions", `{"title":"a\u0000b"}`, "title"},
		{"PATCH", session, `{"title":"a\u0000b"}`, "title"},
		{"POST", "/v1/skills", `{"slug":"greet\u0000","description":"Says hello"}`, "slug"},
		{"PUT", "/v1/skills/greet%00", `{"description":"Says hello"}`, "slug"},
		{"GET", "/v1/skills/greet%00", ``, "slug"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path+" "+tt.wantField, func(t *testing.T) {
			status, _, body := rawDo(t, tt.method, e.url+tt.path, a.admin.key, []byte(tt.give))
			if status != http.StatusBadRequest || body.Error.Code != "invalid_request" ||
				!strings.Contains(body.Error.Message, tt.wantField+": a string may not contain the NUL character") {
				t.Errorf("%s %s %s = %d %+v, want 400 invalid_request naming %s", tt.method, tt.path, tt.give, status, body.Error, tt.wantField)
			}
		})
	}

	// Nothing of it was stored.
	if ps, err := a.admin.c.Projects(ctx); err != nil || len(ps) != 1 || ps[0].Name != a.project.Name {
		t.Errorf("projects = %+v, %v; want only %q", ps, err, a.project.Name)
	}
	if s, err := a.admin.c.Session(ctx, a.session.ID); err != nil || s.Title != a.session.Title {
		t.Errorf("session = %+v, %v; want the title %q kept", s, err, a.session.Title)
	}
	if sk, err := a.admin.c.Skills(ctx); err != nil || len(sk) != 0 {
		t.Errorf("skills = %+v, %v; want none", sk, err)
	}

	// Over the socket: the prompt as text and as blocks.
	c, err := a.member.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e.stub.takeCalls()
	for _, m := range []struct {
		give      api.SendMessage
		wantField string
	}{
		{api.SendMessage{Text: "hello\x00"}, "text"},
		{api.SendMessage{Prompt: []json.RawMessage{json.RawMessage(`{"type":"text","text":"\u0000"}`)}}, "prompt[0].text"},
	} {
		_, err := c.Send(ctx, a.session.ID, m.give)
		var ae *events.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != "invalid_request" ||
			!strings.Contains(ae.Message, m.wantField+": a string may not contain the NUL character") {
			t.Errorf("WS send %+v = %v, want 400 invalid_request naming %s", m.give, err, m.wantField)
		}
	}
	if calls := e.stub.takeCalls(); len(calls) != 0 {
		t.Errorf("streammgr was called %d times, want none", len(calls))
	}
	if err := c.Ping(ctx); err != nil {
		t.Errorf("the socket after the refusals: %v", err)
	}
}
