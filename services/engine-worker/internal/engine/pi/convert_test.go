package pi_test

import (
	"encoding/json"
	"flag"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

var update = flag.Bool("update", false, "rewrite the golden files of the converter tests")

// fixedNow stamps converted messages, so goldens are stable.
var fixedNow = func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// TestConvertGolden converts every transcript in testdata (reference
// captures of 0.73.1 in RPC and JSON mode, and recordings of the pinned
// pi against fakellm) and compares the outputs with
// testdata/<name>.golden.json. Lines the host wrote ({"_sent": …}) are
// skipped; agent_start opens a turn and agent_end ends it, as in the
// adapter. The session is the one get_state or the JSON mode's header
// named last. Every complete turn must obey the structural rules.
func TestConvertGolden(t *testing.T) {
	if *record {
		t.Run("record", recordTranscripts)
	}
	enginetest.Golden(t, enginetest.Goldens{Engine: events.EnginePi, MinFiles: 8, Convert: convert, Update: *update})
}

// convert converts a transcript, one []Output per turn.
func convert(t *testing.T, _ string, lines [][]byte) [][]events.Output {
	var turns [][]events.Output
	var cur []events.Output
	session := "transcript"
	var conv *pi.Converter
	for _, line := range lines {
		if enginetest.HostLine(line) {
			continue
		}
		ev, err := pi.DecodeLine(line)
		if err != nil {
			t.Fatalf("line %.80s: %v", line, err)
		}
		if id := sessionOf(ev); id != "" {
			session = id
		}
		if ev.Type == "agent_start" {
			conv = &pi.Converter{Model: "claude-sonnet-4-5", Provider: "anthropic", Now: fixedNow}
			conv.SetSession(session)
			cur = conv.Init()
			continue
		}
		if conv == nil {
			continue
		}
		cur = append(cur, conv.Convert(ev)...)
		if conv.Ended() {
			turns, cur, conv = append(turns, cur), nil, nil
		}
	}
	if len(cur) > 0 {
		turns = append(turns, cur)
	}
	return turns
}

// sessionOf is the session a get_state response or a JSON-mode header names.
func sessionOf(ev pi.Event) string {
	if ev.Type == "session" {
		return ev.ID
	}
	if ev.Type == "response" && ev.Command == "get_state" {
		var st struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(ev.Data, &st)
		return st.SessionID
	}
	return ""
}
