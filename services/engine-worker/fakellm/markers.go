package fakellm

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"
)

// longDeltas is how many deltas @@LONG@@ streams.
const longDeltas = 2000

// maxTextDeltas caps @@TEXT:n@@ so that a prompt cannot ask for an endless stream.
const maxTextDeltas = 100_000

var textMarker = regexp.MustCompile(`@@TEXT:(\d{1,9})@@`)

// shellMarker is @@SH:<base64url>@@: a call to the shell tool running the
// decoded command (hostile-agent tests choose what an agent runs).
var shellMarker = regexp.MustCompile(`@@SH:([A-Za-z0-9_-]+)@@`)

// markers are the directives found in the last user turn.
type markers struct {
	think, tool, write, ask, mcp, slow, fail bool
	// mcpAsk: a call to an MCP server's ask_user tool (@@MCP_ASK@@).
	mcpAsk bool
	// rateLimit: HTTP 429 with Retry-After (@@RATELIMIT@@); slowFail: HTTP
	// 500 after Config.ErrorDelay (@@SLOW_ERROR@@).
	rateLimit, slowFail bool
	deltas              int // numbered 6-byte text deltas asked for by @@LONG@@ or @@TEXT:n@@
	// A JSON answer in text comes in a ```json fence with prose around it
	// (@@JSON_FENCED@@), or cut off halfway (@@JSON_TRUNCATED@@).
	jsonFenced, jsonTruncated bool
	// shell is the command @@SH:…@@ asks to run; "" when none (or when it
	// does not decode).
	shell string
}

func findMarkers(text string) markers {
	m := markers{
		think: strings.Contains(text, "@@THINK@@"),
		tool:  strings.Contains(text, "@@TOOL@@"),
		write: strings.Contains(text, "@@WRITE@@"),
		ask:   strings.Contains(text, "@@ASK@@"),
		mcp:   strings.Contains(text, "@@MCP@@"),

		mcpAsk: strings.Contains(text, "@@MCP_ASK@@"),
		slow:   strings.Contains(text, "@@SLOW@@"),
		fail:   strings.Contains(text, "@@ERROR@@"),

		rateLimit: strings.Contains(text, "@@RATELIMIT@@"),
		slowFail:  strings.Contains(text, "@@SLOW_ERROR@@"),

		jsonFenced:    strings.Contains(text, "@@JSON_FENCED@@"),
		jsonTruncated: strings.Contains(text, "@@JSON_TRUNCATED@@"),
	}
	if strings.Contains(text, "@@LONG@@") {
		m.deltas = longDeltas
	}
	if sub := shellMarker.FindStringSubmatch(text); sub != nil {
		if b, err := base64.RawURLEncoding.DecodeString(sub[1]); err == nil {
			m.shell = string(b)
		}
	}
	if sub := textMarker.FindStringSubmatch(text); sub != nil {
		n, _ := strconv.Atoi(sub[1]) // at most nine digits: always fits
		m.deltas = min(max(n, 1), maxTextDeltas)
	}
	return m
}

// String lists the markers found, space separated, for the request log.
func (m markers) String() string {
	var out []string
	for _, f := range []struct {
		on   bool
		name string
	}{
		{m.think, "@@THINK@@"}, {m.tool, "@@TOOL@@"}, {m.write, "@@WRITE@@"},
		{m.ask, "@@ASK@@"}, {m.mcp, "@@MCP@@"}, {m.mcpAsk, "@@MCP_ASK@@"}, {m.slow, "@@SLOW@@"}, {m.fail, "@@ERROR@@"},
		{m.rateLimit, "@@RATELIMIT@@"}, {m.slowFail, "@@SLOW_ERROR@@"},
		{m.jsonFenced, "@@JSON_FENCED@@"}, {m.jsonTruncated, "@@JSON_TRUNCATED@@"},
	} {
		if f.on {
			out = append(out, f.name)
		}
	}
	if m.shell != "" {
		out = append(out, "@@SH@@")
	}
	if m.deltas > 0 {
		out = append(out, "@@TEXT:"+strconv.Itoa(m.deltas)+"@@")
	}
	return strings.Join(out, " ")
}
