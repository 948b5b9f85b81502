package codex_test

import (
	"flag"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// recordings are the transcripts recordTranscripts makes: each a list of
// turns of one chat, on one warm app-server.
var recordings = enginetest.Recordings(enginetest.RecordAsk, enginetest.RecordMCP, enginetest.RecordLong(300))

var record = flag.Bool("record", false, "re-record testdata/record-*.jsonl from the pinned CLI before the golden test (with -update)")

// recordTranscripts records fresh transcripts of the pinned CLI against
// fakellm into testdata (enginetest.Record).
func recordTranscripts(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EngineCodex)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	enginetest.Record(t, sb, enginetest.RecordSpec{
		New: func(tap func(bool, []byte), state string) engine.Engine {
			return codex.New(codex.Config{Process: engine.Process{Bin: bin, StateDir: state, Wrap: sb.Wrap, Tap: tap}, Credentials: codex.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EngineCodex})
		},
		Model:  testModel,
		Prefix: "record-",
	}, recordings)
}
