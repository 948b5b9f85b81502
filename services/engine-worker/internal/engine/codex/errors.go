package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

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
	case status >= 400:
		return events.KindInvalidRequest
	}
	m := strings.ToLower(msg)
	switch {
	case engine.ContainsAny(m, "401 unauthorized", "invalid api key", "incorrect api key", "authentication", "not logged in"):
		return events.KindAuth
	case engine.ContainsAny(m, "rate limit", "usage limit", "429"):
		return events.KindRateLimited
	case strings.Contains(m, "model") && engine.ContainsAny(m, "not found", "does not exist", "not supported"):
		return events.KindModelUnavailable
	case engine.ContainsAny(m, "no rollout found", "thread not found", "no thread", "unknown thread"):
		return events.KindInvalidRequest
	}
	return events.KindProvider
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
	last := engine.LastLine(stderr)
	code := -1
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		code = ee.ExitCode()
	}
	msg := fmt.Sprintf("codex app-server exited (status %d) during the turn", code)
	if last != "" {
		msg += ": " + last
	}
	return &engine.Error{Kind: events.KindCrashed, Msg: msg, Err: waitErr}
}
