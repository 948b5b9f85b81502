package acp

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// rpcError classifies an agent's error response to a request (op names the
// request, for the message). The agents put the provider's failure in the
// error's message or data: its HTTP status first, then its words decide.
func rpcError(op string, err error) error {
	var re *RPCError
	if !errors.As(err, &re) {
		return &engine.Error{Kind: events.KindCrashed, Msg: op + ": " + err.Error(), Err: err}
	}
	msg := providerMessage(strings.TrimSpace(re.Message))
	if d := strings.TrimSpace(dataText(re.Data)); d != "" && d != msg {
		msg += ": " + d
	}
	if re.Code >= 400 && re.Code < 600 && !strings.Contains(msg, strconv.Itoa(re.Code)) {
		// Gemini CLI gives the provider's HTTP status as the error's code.
		msg = fmt.Sprintf("%s (HTTP %d)", msg, re.Code)
	}
	return &engine.Error{Kind: kindOf(msg), Msg: msg, Err: err}
}

// withStatus adds the HTTP status of the model calls the agent retried to
// the error it gave up with, when its words leave it out (Qwen Code: "Rate
// limit exceeded. Try again later.").
func withStatus(err error, status int) error {
	var e *engine.Error
	if status == 0 || !errors.As(err, &e) || strings.Contains(e.Msg, strconv.Itoa(status)) {
		return err
	}
	return &engine.Error{Kind: engine.RetryKind(status), Msg: fmt.Sprintf("%s (HTTP %d)", e.Msg, status), Err: e.Err}
}

// providerMessage unwraps a provider's JSON error body that an agent
// passed on as its message (Gemini: {"error":{"code":500,"message":…}}).
func providerMessage(msg string) string {
	var body struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if !strings.HasPrefix(msg, "{") || json.Unmarshal([]byte(msg), &body) != nil || body.Error.Message == "" {
		return msg
	}
	if body.Error.Code != 0 {
		return fmt.Sprintf("%s (status %d)", body.Error.Message, body.Error.Code)
	}
	return body.Error.Message
}

// kindOf maps an error message to an error kind.
func kindOf(msg string) events.ErrorKind { return errorTable.Kind(0, msg) }

// errorTable classifies the agents' error messages by their words.
var errorTable = engine.ErrorTable{
	{Kind: events.KindAuth, Words: []string{"authentication required", "invalid api key", "unauthorized", "401", "403", "forbidden",
		"not logged in", "invalid auth", "api key not valid", "please login", "please log in"}},
	{Kind: events.KindRateLimited, Words: []string{"429", "rate limit", "rate_limit", "too many requests", "quota exceeded", "resource_exhausted"}},
	{Kind: events.KindModelUnavailable, With: "model", Words: []string{"not found", "not available", "does not exist", "not supported", "404"}},
	{Kind: events.KindInvalidRequest, Words: []string{"session not found", "invalid session", "unknown session", "no session"}},
}

// startError classifies a start-up that failed: the agent's stderr says
// why when it can (no login, a missing runtime); otherwise it crashed.
func startError(name string, err error, p *proc) error {
	last := engine.LastLine(p.Stderr())
	msg := fmt.Sprintf("%s did not start: %v", name, err)
	if last != "" {
		msg += ": " + last
	}
	kind := events.KindCrashed
	var re *RPCError
	if errors.As(err, &re) {
		kind = kindOf(re.Error())
	}
	return &engine.Error{Kind: kind, Msg: msg, Err: err}
}

// exitError classifies a process that ended in the middle of a turn.
func exitError(name string, p *proc) error {
	<-p.Done()
	msg := fmt.Sprintf("%s exited (status %d) without finishing the turn", name, engine.ExitCode(p.Err()))
	if p.Err() == nil {
		msg = name + " closed its output without finishing the turn"
	}
	msg = engine.WithStderr(msg, p.Stderr())
	return &engine.Error{Kind: events.KindCrashed, Msg: msg, Err: p.Err()}
}
