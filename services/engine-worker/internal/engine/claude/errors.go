package claude

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// ResultError is the error a result line ends its turn with: nil for a
// success or an interrupted turn; otherwise an *engine.Error classified by
// the provider's HTTP status first, then by the words of the message.
func ResultError(l Line) error {
	if Interrupted(l) || l.Subtype == "success" && !l.IsError {
		return nil
	}
	msg := strings.Join(resultErrors(l), "; ")
	return &engine.Error{Kind: kindOf(l.APIErrorStatus, msg), Msg: msg}
}

// kindOf maps an HTTP status and a message to an error kind.
func kindOf(status int, msg string) events.ErrorKind {
	switch {
	case status == 401 || status == 403:
		return events.KindAuth
	case status == 429:
		return events.KindRateLimited
	case status == 404:
		return events.KindModelUnavailable
	case status >= 500:
		return events.KindProvider
	}
	m := strings.ToLower(msg)
	switch {
	case engine.ContainsAny(m, "invalid api key", "authentication", "unauthorized", "please run /login", "oauth token", "not logged in"):
		return events.KindAuth
	case engine.ContainsAny(m, "rate limit", "rate_limit", "usage limit"):
		return events.KindRateLimited
	case strings.Contains(m, "model") && engine.ContainsAny(m, "not found", "not available", "does not exist", "not supported", "or newer is required"):
		return events.KindModelUnavailable
	case engine.ContainsAny(m, "no conversation found", "valid session id"):
		return events.KindInvalidRequest
	case status >= 400:
		return events.KindInvalidRequest
	}
	return events.KindProvider
}

// exitError classifies a process that ended without a result: its stderr
// says why when it can (no login, an unknown session); otherwise it crashed.
func exitError(waitErr error, stderr string) error {
	last := engine.LastLine(stderr)
	code := -1
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code = ee.ExitCode()
	}
	msg := fmt.Sprintf("Claude Code exited (status %d) without finishing the turn", code)
	if waitErr == nil {
		msg = "Claude Code closed its output without finishing the turn"
	}
	if last != "" {
		msg += ": " + last
	}
	kind := events.KindCrashed
	if k := kindOf(0, last); last != "" && k != events.KindProvider {
		kind = k
	}
	return &engine.Error{Kind: kind, Msg: msg, Err: waitErr}
}
