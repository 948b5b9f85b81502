package claude

import (
	"fmt"
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

// kindOf maps an HTTP status and a message to an error kind. A 4xx the
// status does not decide is an invalid request only when the words do not
// say otherwise.
func kindOf(status int, msg string) events.ErrorKind {
	if k, ok := engine.StatusKind(status); ok {
		return k
	}
	if k, ok := errorTable.Match(msg); ok {
		return k
	}
	if status >= 400 {
		return events.KindInvalidRequest
	}
	return events.KindProvider
}

// errorTable classifies Claude Code's error messages by their words.
var errorTable = engine.ErrorTable{
	{Kind: events.KindAuth, Words: []string{"invalid api key", "authentication", "unauthorized", "please run /login", "oauth token", "not logged in"}},
	{Kind: events.KindRateLimited, Words: []string{"rate limit", "rate_limit", "usage limit"}},
	{Kind: events.KindModelUnavailable, With: "model", Words: []string{"not found", "not available", "does not exist", "not supported", "or newer is required"}},
	{Kind: events.KindInvalidRequest, Words: []string{"no conversation found", "valid session id"}},
}

// exitError classifies a process that ended without a result: its stderr
// says why when it can (no login, an unknown session); otherwise it crashed.
func exitError(waitErr error, stderr string) error {
	last := engine.LastLine(stderr)
	msg := fmt.Sprintf("Claude Code exited (status %d) without finishing the turn", engine.ExitCode(waitErr))
	if waitErr == nil {
		msg = "Claude Code closed its output without finishing the turn"
	}
	msg = engine.WithStderr(msg, stderr)
	kind := events.KindCrashed
	if k := kindOf(0, last); last != "" && k != events.KindProvider {
		kind = k
	}
	return &engine.Error{Kind: kind, Msg: msg, Err: waitErr}
}
