package stack

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
)

// TestNULIsRefusedBehindTheBus: the services behind the gateway refuse a
// string holding NUL, which Postgres cannot store, on their own, naming the
// field, for any caller on the bus (the gateway refuses it first, so this
// calls them directly): a 400, not a failed insert answered 500, and not a
// prompt accepted that the event log then cannot write.
func TestNULIsRefusedBehindTheBus(t *testing.T) {
	h := start(t, Config{NoWorkers: true})
	tn := newTenant()
	s := h.session(tn, "scripted/hello")
	title := "a\x00b"
	tests := []struct {
		service, op string
		req         any
		wantField   string
	}{
		{"streammgr", events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project, Title: title}, "title"},
		{"streammgr", events.OpSessionUpdate, events.SessionUpdate{Caller: tn.Caller, SessionID: s.ID, Title: &title}, "title"},
		{"streammgr", events.OpStart, events.StartTurnRequest{Caller: tn.Caller, SessionID: s.ID,
			Prompt: []events.Block{events.TextBlock{Text: "hello"}, events.TextBlock{Text: title}}}, "prompt[1].text"},
		{events.ArtifactsService, events.OpSkillsPut, events.SkillPut{Caller: tn.Caller,
			Skill: events.Skill{Slug: "greet\x00", Description: "Says hello"}}, "skill.slug"},
		{events.ArtifactsService, events.OpSkillsGet, events.ArtifactRef{Caller: tn.Caller, Slug: "greet\x00"}, "slug"},
	}
	for _, tt := range tests {
		subject, _ := events.ServiceSubject(tt.service, tt.op)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := svc.Call(h.as(ctx, tt.req), h.nc, subject, tt.req, nil)
		cancel()
		var e *events.APIError
		if !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Code != "invalid_request" ||
			!strings.Contains(e.Message, tt.wantField+": a string may not contain the NUL character") {
			t.Errorf("%s %s: err = %v, want 400 invalid_request naming %s", tt.service, tt.op, err, tt.wantField)
		}
	}
	// Nothing was stored: the session keeps its title and has no run.
	var got events.Session
	h.must(events.OpSessionGet, events.SessionRef{Caller: tn.Caller, SessionID: s.ID}, &got)
	var runs []events.Run
	h.must(events.OpRunsList, events.RunList{Caller: tn.Caller, SessionID: s.ID}, &runs)
	if got.Title != s.Title || len(runs) != 0 {
		t.Errorf("session %+v with runs %+v; want it unchanged, without a run", got, runs)
	}
}
