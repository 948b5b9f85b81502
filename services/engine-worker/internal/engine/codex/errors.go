package codex

import (
	"encoding/json"
	"errors"
	"fmt"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// turnError classifies a failed turn by codex's error info (its kind, and
// the provider's HTTP status when it carries one), then by the message.
func turnError(msg string, info json.RawMessage) error {
	kind, status := infoKind(info)
	if kind == "" {
		kind = kindOf(status, msg)
	}
	return &engine.Error{Kind: kind, Msg: msg}
}

// infoStatus is the provider's HTTP status a CodexErrorInfo names: its
// httpStatusCode, or the status its kind stands for (codex words a 500 as
// "We're currently experiencing high demand" and says internalServerError).
func infoStatus(info json.RawMessage) int {
	var name string
	if json.Unmarshal(info, &name) == nil {
		switch name {
		case "unauthorized":
			return 401
		case "usageLimitExceeded", "rateLimitExceeded":
			return 429
		case "internalServerError":
			return 500
		}
		return 0
	}
	_, status := infoKind(info)
	return status
}

// infoKind reads CodexErrorInfo: a plain string, or an object with one key
// whose value may carry httpStatusCode.
func infoKind(info json.RawMessage) (events.ErrorKind, int) {
	var name string
	if json.Unmarshal(info, &name) == nil {
		switch name {
		case "unauthorized":
			return events.KindAuth, 0
		case "usageLimitExceeded", "rateLimitExceeded":
			return events.KindRateLimited, 0
		case "modelNotFound":
			return events.KindModelUnavailable, 0
		case "serverOverloaded", "internalServerError":
			return events.KindProvider, 0
		case "badRequest", "contextWindowExceeded":
			return events.KindInvalidRequest, 0
		}
		return "", 0
	}
	var obj map[string]struct {
		HTTPStatusCode int `json:"httpStatusCode"`
	}
	if json.Unmarshal(info, &obj) == nil {
		for _, v := range obj {
			return "", v.HTTPStatusCode
		}
	}
	return "", 0
}

// kindOf maps an HTTP status and a message to an error kind.
func kindOf(status int, msg string) events.ErrorKind { return errorTable.Kind(status, msg) }

// errorTable classifies codex's error messages by their words.
var errorTable = engine.ErrorTable{
	{Kind: events.KindAuth, Words: []string{"401 unauthorized", "invalid api key", "incorrect api key", "authentication", "not logged in"}},
	{Kind: events.KindRateLimited, Words: []string{"rate limit", "usage limit", "429"}},
	{Kind: events.KindModelUnavailable, With: "model", Words: []string{"not found", "does not exist", "not supported"}},
	{Kind: events.KindInvalidRequest, Words: []string{"no rollout found", "thread not found", "no thread", "unknown thread"}},
}

// rpcError classifies a failed request of the client (thread/fork of an
// unknown thread, a refused turn/start).
func rpcError(op string, err error) error {
	var re *RPCError
	if errors.As(err, &re) {
		return &engine.Error{Kind: kindOf(0, re.Message), Msg: fmt.Sprintf("codex %s: %s", op, re.Message), Err: err}
	}
	return &engine.Error{Kind: events.KindCrashed, Msg: fmt.Sprintf("codex %s: %v", op, err), Err: err}
}

// exitError classifies an app-server that died: its stderr says why when
// it can (a bad config); otherwise it crashed.
func exitError(waitErr error, stderr string) error {
	msg := engine.WithStderr(fmt.Sprintf("codex app-server exited (status %d) during the turn", engine.ExitCode(waitErr)), stderr)
	return &engine.Error{Kind: events.KindCrashed, Msg: msg, Err: waitErr}
}
