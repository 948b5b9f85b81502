package codex_test

import (
	"encoding/json"
	"flag"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

var update = flag.Bool("update", false, "rewrite the golden files of the converter tests")

// fixedNow stamps converted messages, so goldens are stable.
var fixedNow = func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// TestConvertGolden converts every transcript in testdata (the reference
// capture of 0.171.0's app-server, and recordings of the pinned CLI
// against fakellm) and compares the outputs with
// testdata/<name>.golden.json. Lines the host wrote ({"_sent": …}) are
// skipped; each turn/completed ends a turn (the next turn's converter
// starts on the same thread), as in the adapter. Every complete turn must
// also obey the event contract's structural rules.
func TestConvertGolden(t *testing.T) {
	if *record {
		t.Run("record", recordTranscripts)
	}
	enginetest.Golden(t, enginetest.Goldens{Engine: events.EngineCodex, MinFiles: 8, Convert: convert, Update: *update})
}

// convert converts a transcript, one []Output per turn.
func convert(t *testing.T, _ string, lines [][]byte) [][]events.Output {
	var turns [][]events.Output
	var cur []events.Output
	conv := &codex.Converter{Model: "gpt-5.5", Now: fixedNow}
	for _, line := range lines {
		if enginetest.HostLine(line) {
			continue
		}
		m, err := codex.DecodeLine(line)
		if err != nil {
			t.Fatalf("line %.80s: %v", line, err)
		}
		if m.Method == "mcpServer/startupStatus/updated" && len(conv.MCPServers) == 0 {
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(m.Params, &p)
			conv.MCPServers = []string{p.Name} // the recording's turn configured it
		}
		cur = append(cur, conv.Convert(m)...)
		if _, ended := conv.Ended(); ended {
			turns = append(turns, cur)
			thread := conv.Thread()
			cur, conv = nil, &codex.Converter{Model: "gpt-5.5", Now: fixedNow}
			conv.SetThread(thread) // a next turn/start without a new thread continues it
		}
	}
	if len(cur) > 0 {
		turns = append(turns, cur)
	}
	return turns
}
