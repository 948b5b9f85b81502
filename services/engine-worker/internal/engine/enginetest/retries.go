package enginetest

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// retryBound is how long a turn whose every model call fails may go on
// after the first failure: an adapter gives up retrying after its retry
// budget (30 s by default), and a little more for the agent's backoff and
// for it to report.
const retryBound = 45 * time.Second

// rateLimited: every model call answers 429 with Retry-After. The turn
// must end within retryBound as a rate-limit failure that names the
// status, and an agent that retries says so while it does.
func (s *suite) rateLimited(t *testing.T) {
	s.failingCalls(t, "@@RATELIMIT@@ Answer despite the rate limit.", "@@RATELIMIT@@", events.KindRateLimited, 429)
}

// slowProviderError: every model call waits, then answers 500.
func (s *suite) slowProviderError(t *testing.T) {
	s.failingCalls(t, "@@SLOW_ERROR@@ Fail slowly, please.", "@@SLOW_ERROR@@", events.KindProvider, 500)
}

func (s *suite) failingCalls(t *testing.T, prompt, marker string, kind events.ErrorKind, status int) {
	c := s.newChat(t)
	rec := NewRecorder()
	began := time.Now()
	res, err := c.turn(t, prompt, "", rec)
	ended := time.Now()
	took := ended.Sub(began)
	code := strconv.Itoa(status)
	kinds := []events.ErrorKind{kind}
	if s.f.RetriesWithoutStatus {
		// What the CLI lets the adapter know: the kind when its words
		// say it, else a provider failure; no status.
		kinds, code = append(kinds, events.KindProvider), ""
	}
	if err == nil || !slices.Contains(kinds, engine.KindOf(err)) {
		t.Errorf("Run = %v (kind %s), want kind %s", err, engine.KindOf(err), kind)
	}
	if !res.IsError() || !strings.Contains(strings.Join(res.Errors, " "), code) {
		t.Errorf("result = %+v, want a failure naming HTTP %s", res, code)
	}
	calls, first := 0, time.Time{}
	for _, r := range s.sb.Requests(t) {
		if strings.Contains(r.Marker, marker) {
			if calls++; first.IsZero() {
				first = r.Time
			}
		}
	}
	t.Logf("%d model calls in %v", calls, took.Round(time.Millisecond))
	if after := ended.Sub(first); !first.IsZero() && after > retryBound {
		t.Errorf("the turn ended %v after the first failed model call, want at most %v", after.Round(time.Second), retryBound)
	}
	if calls < 2 {
		return // no retry, nothing to say meanwhile
	}
	var said []string
	for _, o := range rec.Outputs() {
		if n, ok := o.(events.Notification); ok {
			if n.Level == events.LevelWarning && strings.Contains(n.Title+" "+n.Message, code) {
				return
			}
			said = append(said, string(n.Level)+": "+n.Title+": "+n.Message)
		}
	}
	t.Errorf("the agent retried %d times with no warning notification naming HTTP %q; notifications: %q", calls, code, said)
}
