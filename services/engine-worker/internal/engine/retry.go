package engine

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"clopen.dev/pkg/events"
)

// DefaultRetryBudget is how long an adapter lets an agent retry failed
// model calls before it gives up on the turn.
const DefaultRetryBudget = 30 * time.Second

// SilentRetrier is implemented by an adapter whose agent retries failed
// model calls without saying so anywhere the adapter can read (Cline
// writes nothing about them over ACP, nor in a log). For such an engine
// the worker tells the user from what its model proxy sees: every call
// the provider answered with 429 or a 5xx becomes a RetryNotice.
type SilentRetrier interface {
	RetriesSilently() bool
}

// RetriesSilently reports whether e's agent retries in silence.
func RetriesSilently(e Engine) bool {
	s, ok := e.(SilentRetrier)
	return ok && s.RetriesSilently()
}

// retryStatus finds the HTTP status in an agent's retry line: "Attempt 2
// failed with status 429. Retrying…", "HTTP 500 … retrying in 2s",
// "status code: 503, retrying", `request failed {"http_status":429,…}`.
var retryStatus = regexp.MustCompile(`(?i)\b(?:status(?: code)?|http(?:/[\d.]+)?|code|http_status)"?\s*[:=]?\s*([45]\d\d)\b`)

// RetryStatus reads a line an agent writes when a model call failed (and
// it is about to try again) and returns the HTTP status it names; ok is
// false for any other line.
func RetryStatus(line string) (status int, ok bool) {
	if len(line) > 4096 {
		line = line[:4096]
	}
	if l := strings.ToLower(line); !strings.Contains(l, "retr") && !strings.Contains(l, "request failed") {
		return 0, false
	}
	m := retryStatus.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	n, _ := strconv.Atoi(m[1]) // three digits
	return n, true
}

// RetryKind is the error kind of a model call that failed with status.
func RetryKind(status int) events.ErrorKind {
	switch {
	case status == 429:
		return events.KindRateLimited
	case status == 401 || status == 403:
		return events.KindAuth
	}
	return events.KindProvider
}

// RetryNotice is the notification of an agent retrying after status.
func RetryNotice(sessionID, agent string, status, attempt int) events.Notification {
	return events.Notification{SessionID: sessionID, Level: events.LevelWarning,
		Title:   fmt.Sprintf("%s: HTTP %d from the provider", agent, status),
		Message: fmt.Sprintf("A model call failed with HTTP %d (%s); %s retries failed calls (failure %d).", status, statusText(status), agent, attempt)}
}

// FailedCallNotice is the notification of an agent retrying a failed
// model call whose HTTP status it does not say; detail is the provider's
// words as the agent logged them.
func FailedCallNotice(sessionID, agent, detail string, attempt int) events.Notification {
	msg := fmt.Sprintf("A model call failed; %s retries failed calls (failure %d) and does not say the HTTP status.", agent, attempt)
	if detail = LastLine(detail); detail != "" {
		msg = fmt.Sprintf("A model call failed (%s); %s retries failed calls (failure %d) and does not say the HTTP status.", detail, agent, attempt)
	}
	return events.Notification{SessionID: sessionID, Level: events.LevelWarning, Title: agent + ": a model call failed", Message: msg}
}

// RetryGaveUp is the error of a turn given up after the agent retried for
// budget; last is its last retry line, which carries the provider's words.
func RetryGaveUp(agent string, status int, budget time.Duration, last string) *Error {
	msg := fmt.Sprintf("the provider answered HTTP %d (%s); gave up after %s retried for %s", status, statusText(status), agent,
		budget.Round(time.Second))
	if status == 0 {
		msg = fmt.Sprintf("the provider's model calls kept failing; gave up after %s retried for %s", agent, budget.Round(time.Second))
	}
	if last = LastLine(last); last != "" {
		msg += "; its last retry: " + last
	}
	return &Error{Kind: RetryKind(status), Msg: msg}
}

func statusText(status int) string {
	if status == 429 {
		return "rate limited"
	}
	if status >= 500 {
		return "server error"
	}
	return "refused"
}
