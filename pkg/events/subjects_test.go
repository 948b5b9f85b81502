package events

import (
	"errors"
	"strings"
	"testing"
)

func TestSubjectBuilders(t *testing.T) {
	tests := []struct {
		name string
		give func() (string, error)
		want string
	}{
		{"events", func() (string, error) { return EventsSubject("t1", "r1") }, "ev.t1.r1"},
		{"chat", func() (string, error) { return ChatSubject("t1", "s1") }, "chat.t1.s1"},
		{"job", func() (string, error) { return JobSubject("claude-code") }, "job.claude-code"},
		{"notify", func() (string, error) { return NotifySubject("t1", "p1") }, "notify.t1.p1"},
		{"control", func() (string, error) { return ControlSubject("r1", VerbCancel) }, "ctl.run.r1.cancel"},
		{"control wildcard", func() (string, error) { return ControlWildcard("r1") }, "ctl.run.r1.>"},
		{"service", func() (string, error) { return ServiceSubject("streammgr", "start") }, "svc.streammgr.start"},
		{"service op with tokens", func() (string, error) { return ServiceSubject("streammgr", "sessions.create") }, "svc.streammgr.sessions.create"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.give()
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSubjectBuildersRejectBadTokens(t *testing.T) {
	bad := []string{
		"", "a.b", "*", ">", "a*", "a>b", "a b", "a\tb", "a\nb", "$SYS",
		strings.Repeat("x", MaxTokenLen+1), "é", "a\x00b",
	}
	for _, tok := range bad {
		if _, err := EventsSubject("tenant", tok); !errors.Is(err, ErrBadToken) {
			t.Errorf("EventsSubject(tenant, %q) err = %v, want ErrBadToken", tok, err)
		}
		if _, err := ChatSubject(tok, "s"); !errors.Is(err, ErrBadToken) {
			t.Errorf("ChatSubject(%q, s) err = %v, want ErrBadToken", tok, err)
		}
		if _, err := ControlSubject(tok, VerbCancel); !errors.Is(err, ErrBadToken) {
			t.Errorf("ControlSubject(%q) err = %v, want ErrBadToken", tok, err)
		}
		if _, err := KVKey(tok); !errors.Is(err, ErrBadToken) {
			t.Errorf("KVKey(%q) err = %v, want ErrBadToken", tok, err)
		}
	}
	if _, err := EventsSubject("t", strings.Repeat("x", MaxTokenLen)); err != nil {
		t.Errorf("a token of exactly MaxTokenLen bytes was refused: %v", err)
	}
}

func TestParseSubjects(t *testing.T) {
	tenant, run, err := ParseEventsSubject("ev.t1.r1")
	if err != nil || tenant != "t1" || run != "r1" {
		t.Errorf("ParseEventsSubject = %q, %q, %v", tenant, run, err)
	}
	for _, s := range []string{"ev.t1", "chat.t1.s1", "ev.t1.r1.x", "ev..r1", "ev.*.r1"} {
		if _, _, err := ParseEventsSubject(s); err == nil {
			t.Errorf("ParseEventsSubject(%q) accepted", s)
		}
	}
	if _, s, err := ParseChatSubject("chat.t1.s1"); err != nil || s != "s1" {
		t.Errorf("ParseChatSubject = %q, %v", s, err)
	}
}
