package streammgr

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// TestQueuedTurnIsShownToEveryClient: a turn sent while another runs waits
// behind it, and every client of the session learns so (a run-state queued
// event saying why), and can show what waits: the runs list quotes its
// prompt as typed.
func TestQueuedTurnIsShownToEveryClient(t *testing.T) {
	s := startAdmission(t, testConfig())
	a := newParty()
	session := s.session(a)
	first := s.mustSend(a, session, "first turn")
	second := s.mustSend(a, session, "second turn, typed while the first runs")
	if first.Queued || !second.Queued {
		t.Fatalf("replies %+v, %+v: want the second queued", first, second)
	}

	subject, _ := events.ChatSubject(a.TenantID, session)
	c, err := s.js.OrderedConsumer(s.ctx, events.StreamChat, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		t.Fatal(err)
	}
	var queued *events.ChatRunState
	for queued == nil {
		msg, err := c.Next(jetstream.FetchMaxWait(10 * time.Second))
		if err != nil {
			t.Fatalf("no run-state queued event for the waiting turn: %v", err)
		}
		ev, err := events.DecodeChatEvent(msg.Data())
		if err != nil {
			t.Fatal(err)
		}
		if rs, ok := ev.Data.(events.ChatRunState); ok && ev.RunID == second.RunID {
			queued = &rs
		}
	}
	if queued.State != events.RunQueued || queued.Reason != reasonBehind {
		t.Errorf("the waiting turn's event = %+v, want queued %q", *queued, reasonBehind)
	}

	var runs []events.Run
	if err := s.try(events.OpRunsList, events.RunList{Caller: a.Caller, SessionID: session}, &runs); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(runs, func(r events.Run) bool { return r.ID == second.RunID })
	if i < 0 || runs[i].Prompt != "second turn, typed while the first runs" || runs[i].DispatchedAt != nil {
		t.Errorf("runs = %+v, want the waiting turn undispatched with its prompt", runs)
	}
}

// TestSessionSearch: a query keeps the sessions whose title or head title
// contains it, in any case, with LIKE's wildcards taken literally, and
// never reaches another tenant's sessions.
func TestSessionSearch(t *testing.T) {
	s := startAdmission(t, testConfig())
	a, other := newParty(), newParty()
	titled := func(p party, title string) string {
		var out events.Session
		if err := s.try(events.OpSessionCreate, events.SessionCreate{Caller: p.Caller, ProjectID: p.project, Title: title}, &out); err != nil {
			t.Fatal(err)
		}
		return out.ID
	}
	parser, docs, percent := titled(a, "Fix the parser"), titled(a, "Write docs"), titled(a, "100%_done")
	s.mustSend(a, docs, "Explain the PARSER's error recovery") // the head title now names the parser too
	other.project = a.project                                  // the same project id, another tenant
	titled(other, "parser of another tenant")

	tests := []struct {
		give string
		want []string
	}{
		{"parser", []string{docs, parser}}, // newest first
		{"PARSER", []string{docs, parser}},
		{"%", []string{percent}},
		{"_", []string{percent}},
		{"nothing like it", []string{}},
		{"", []string{percent, docs, parser}},
	}
	for _, tt := range tests {
		var got []events.Session
		if err := s.try(events.OpSessionList, events.SessionList{Caller: a.Caller, ProjectID: a.project, Query: tt.give}, &got); err != nil {
			t.Fatalf("list %q: %v", tt.give, err)
		}
		ids := []string{}
		for _, ss := range got {
			ids = append(ids, ss.ID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("list %q = %v, want %v", tt.give, ids, tt.want)
		}
	}
	long := make([]byte, events.MaxSessionQuery+1)
	for i := range long {
		long[i] = 'a'
	}
	var got []events.Session
	if err := s.try(events.OpSessionList, events.SessionList{Caller: a.Caller, ProjectID: a.project, Query: string(long)}, &got); err == nil {
		t.Errorf("a query of %d bytes was accepted", len(long))
	}
}
