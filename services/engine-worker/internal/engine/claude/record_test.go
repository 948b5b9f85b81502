package claude_test

import (
	"flag"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// recordings are the transcripts recordTranscripts makes.
var recordings = enginetest.Recordings(enginetest.RecordAsk, enginetest.RecordLong(300))

var record = flag.Bool("record", false, "re-record testdata/record-*.jsonl from the pinned CLI before the golden test (with -update)")

// recordTranscripts records fresh transcripts of the pinned CLI against
// fakellm into testdata (enginetest.Record).
func recordTranscripts(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineClaudeCode)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	enginetest.Record(t, sb, enginetest.RecordSpec{
		New: func(tap func(bool, []byte), state string) engine.Engine {
			return claude.New(claude.Config{Process: engine.Process{Bin: bin, StateDir: state, Wrap: sb.Wrap, Tap: tap, IdleTimeout: -1}, Credentials: claude.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineClaudeCode})
		},
		Model:  claude.DefaultModel,
		Settle: 200 * time.Millisecond, // the retired process's last lines
		Prefix: "record-",
	}, recordings)
}
