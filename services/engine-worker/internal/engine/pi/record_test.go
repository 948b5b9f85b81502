package pi_test

import (
	"flag"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// recordings are the transcripts recordTranscripts makes: each a list of
// turns of one chat, on one warm pi.
var recordings = enginetest.Recordings(enginetest.RecordAsk, enginetest.RecordMCP,
	// Every message_update line carries the whole partial message: 60 deltas
	// already make a 60 KB transcript.
	enginetest.RecordLong(60))

var record = flag.Bool("record", false, "re-record testdata/record-*.jsonl from the pinned CLI before the golden test (with -update)")

// recordTranscripts records fresh transcripts of the pinned CLI against
// fakellm into testdata (enginetest.Record).
func recordTranscripts(t *testing.T) {
	bin := enginetest.InstalledBin(t, events.EnginePi)
	sb := enginetest.NewSandbox(t, 30*time.Second)
	enginetest.Record(t, sb, enginetest.RecordSpec{
		New: func(tap func(bool, []byte), state string) engine.Engine {
			return pi.New(pi.Config{Process: engine.Process{Bin: bin, StateDir: state, Wrap: sb.Wrap, Tap: tap}, Credentials: pi.EnvCredentials{BaseURL: sb.BaseURL}}, engine.Key{Engine: events.EnginePi})
		},
		Model:   testModel,
		Request: func(r *engine.Request) { r.ProjectID = "p" },
		Prefix:  "record-",
	}, recordings)
}
