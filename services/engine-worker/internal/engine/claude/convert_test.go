package claude_test

import (
	"flag"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

var update = flag.Bool("update", false, "rewrite the golden files of the converter tests")

// fixedNow stamps converted messages, so goldens are stable.
var fixedNow = func() time.Time { return time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC) }

// TestConvertGolden converts every transcript in testdata (reference
// captures of 2.1.197 and 2.1.332, and recordings of the pinned CLI against
// fakellm) and compares the outputs with testdata/<name>.golden.json. Lines
// the host wrote ({"_sent": …}) are skipped; each result starts a new turn
// (a new converter), as in the adapter. Every complete turn that starts
// with its system_init must also obey the event contract's structural rules.
func TestConvertGolden(t *testing.T) {
	if *record {
		t.Run("record", recordTranscripts)
	}
	enginetest.Golden(t, enginetest.Goldens{Engine: events.EngineClaudeCode, MinFiles: 10, Convert: convert, Update: *update,
		Check: func(_ string, turn []events.Output) []error {
			if _, init := turn[0].(events.SystemInit); !init || !enginetest.Complete(turn) {
				return nil
			}
			return enginetest.CheckTurn(events.EngineClaudeCode, turn, true)
		}})
}

// convert converts a transcript, one []Output per turn.
func convert(t *testing.T, _ string, lines [][]byte) [][]events.Output {
	var turns [][]events.Output
	var cur []events.Output
	conv := &claude.Converter{Now: fixedNow}
	for _, line := range lines {
		if enginetest.HostLine(line) {
			continue
		}
		l, err := claude.DecodeLine(line)
		if err != nil {
			t.Fatalf("line %.80s: %v", line, err)
		}
		cur = append(cur, conv.Convert(l)...)
		if l.Type == "result" {
			turns = append(turns, cur)
			cur, conv = nil, &claude.Converter{Now: fixedNow}
		}
	}
	if len(cur) > 0 {
		turns = append(turns, cur)
	}
	return turns
}
