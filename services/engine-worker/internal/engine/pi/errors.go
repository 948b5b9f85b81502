package pi

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// statusPrefix finds the HTTP status pi puts before a provider's error
// body ("500 {"error":{...}}", "429 rate_limit_error: ...").
var statusPrefix = regexp.MustCompile(`^(\d{3}) (.*)$`)

// statusSuffix finds the status errorText leaves at the end.
var statusSuffix = regexp.MustCompile(`\(status (\d{3})\)$`)

// errorText is pi's error message as people read it: a provider's JSON
// error body becomes its message, the HTTP status moves to the end
// ("forced a server error (status 500)").
func errorText(msg string) string {
	msg = strings.TrimSpace(msg)
	if msg == "terminated" { // Node's fetch, when the connection closes mid-response
		return "the connection to the model API closed before the response ended (pi: terminated)"
	}
	m := statusPrefix.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	text := m[2]
	if json.Unmarshal([]byte(text), &body) == nil {
		text = cmp.Or(body.Error.Message, cmp.Or(body.Message, text))
	}
	return text + " (status " + m[1] + ")"
}

// turnError classifies a failed turn by the provider's HTTP status when
// errorText found one, then by the message's words.
func turnError(msg string) error {
	status := 0
	if m := statusSuffix.FindStringSubmatch(msg); m != nil {
		status, _ = strconv.Atoi(m[1])
	}
	return &engine.Error{Kind: kindOf(status, msg), Msg: msg}
}

// kindOf maps an HTTP status and a message to an error kind.
func kindOf(status int, msg string) events.ErrorKind { return errorTable.Kind(status, msg) }

// errorTable classifies pi's error messages by their words.
var errorTable = engine.ErrorTable{
	{Kind: events.KindAuth, Words: []string{"invalid api key", "invalid x-api-key", "authentication", "unauthorized", "no api key"}},
	{Kind: events.KindRateLimited, Words: []string{"rate limit", "rate_limit", "overloaded"}},
	{Kind: events.KindModelUnavailable, With: "model", Words: []string{"not found", "does not exist", "not supported"}},
}

// exitError classifies a pi process that died: its stderr says why when it
// can; otherwise it crashed.
func exitError(waitErr error, stderr string) error {
	msg := engine.WithStderr(fmt.Sprintf("pi exited (status %d)", engine.ExitCode(waitErr)), stderr)
	return &engine.Error{Kind: events.KindCrashed, Msg: msg, Err: waitErr}
}

// commandError is a command pi refused.
func commandError(command, msg string) error {
	kind := events.KindInvalidRequest
	if command == "set_model" {
		kind = events.KindModelUnavailable
	}
	return &engine.Error{Kind: kind, Msg: fmt.Sprintf("pi %s: %s", command, msg)}
}
