package acp

import (
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

// Lines as OpenCode 1.18 writes them to its log while it retries.
func TestOpenCodeFailedCalls(t *testing.T) {
	const sid = "ses_dd76f96ecffew7oUcJ2J0EANpW"
	build := `INFO  2026-12-02T15:01:02 +12ms service=session.prompt level=ERROR message="stream error" session.id=` + sid +
		` small=false agent=build error.error="AI_APICallError: fakellm: @@SLOW_ERROR@@ forced a server error after a delay"`
	for _, c := range []struct {
		name, line, sid string
		ok              bool
		status          int
		detail          string
	}{
		{"the turn's call", build, sid, true, 0, "AI_APICallError: fakellm: @@SLOW_ERROR@@ forced a server error after a delay"},
		{"another session's", build, "ses_other", false, 0, ""},
		{"a title call", `level=ERROR message="stream error" session.id=` + sid + ` agent=title error.error="x"`, sid, false, 0, ""},
		{"with a status field", `level=ERROR message="stream error" agent=build error.statusCode=429 error.error="Too Many Requests \"slow down\""`, sid, true, 429, `Too Many Requests "slow down"`},
		{"another message", `level=INFO message="prompt" session.id=` + sid, sid, false, 0, ""},
		{"cut off", `message="stream error" agent=build error.error="unterminated`, sid, true, 0, ""},
	} {
		status, detail, ok := openCodeFailedCall(c.line, c.sid)
		if ok != c.ok || status != c.status || detail != c.detail {
			t.Errorf("%s: = %d, %q, %v; want %d, %q, %v", c.name, status, detail, ok, c.status, c.detail, c.ok)
		}
	}
}

// FuzzOpenCodeLog reads OpenCode's log lines, which are outside input.
func FuzzOpenCodeLog(f *testing.F) {
	f.Add(`level=ERROR message="stream error" session.id=ses_1 agent=build error.error="AI_APICallError: x"`)
	f.Add(`a= b="\" c=d=e`)
	f.Fuzz(func(t *testing.T, line string) {
		status, _, ok := openCodeFailedCall(line, "ses_1")
		if !ok && status != 0 || status != 0 && (status < 400 || status > 599) {
			t.Fatalf("status %d, ok %v", status, ok)
		}
	})
}

// A retry that works stops the budget: a turn that recovers from one
// failed call is not given up 30 s later; the next failure starts anew.
func TestARetryThatWorksStopsTheBudget(t *testing.T) {
	r := newRetries("")
	line := `level=ERROR message="stream error" agent=build error.error="boom"`
	if _, ok := r.saw(line, "", &OpenCode, time.Hour); !ok || r.expired() == nil {
		t.Fatal("a failed call did not start the budget")
	}
	r.recovered()
	if r.expired() != nil {
		t.Fatal("the budget still runs after the agent answered")
	}
	n, ok := r.saw(line, "", &OpenCode, time.Hour)
	if !ok || r.expired() == nil {
		t.Fatal("the next failure did not start a new budget")
	}
	if note, _ := n.(events.Notification); !strings.Contains(note.Message, "boom") || !strings.Contains(note.Message, "failure 2") {
		t.Errorf("notice = %+v", n)
	}
	r.stop()
}
