package acp_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"clopen.dev/services/engine-worker/internal/engine"
	"clopen.dev/services/engine-worker/internal/engine/acp"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// recordings are the transcripts recordTranscripts makes for each agent:
// each a list of turns on one warm process.
var recordings = enginetest.Recordings(enginetest.RecordMCP,
	enginetest.Recording{Name: "write", Turns: []string{"@@WRITE@@ Write the file."}})

var record = flag.Bool("record", false, "re-record testdata/record-<agent>-*.jsonl from the pinned agents before the golden test (with -update)")

// recordTranscripts records fresh transcripts of each pinned agent against
// fakellm into testdata (enginetest.Record); RECORD_ONLY=<agent> records
// one agent.
func recordTranscripts(t *testing.T) {
	sb := enginetest.NewSandbox(t, 30*time.Second)
	cache := filepath.Join(enginetest.EnginesDir(), "..", "engine-cache")
	for _, ag := range agents {
		if only := os.Getenv("RECORD_ONLY"); only != "" && only != string(ag.profile.Type) {
			continue
		}
		bin := enginetest.InstalledBin(t, ag.profile.Type)
		t.Run(string(ag.profile.Type), func(t *testing.T) {
			enginetest.Record(t, sb, enginetest.RecordSpec{
				New: func(tap func(bool, []byte), state string) engine.Engine {
					return acp.New(acp.Config{Process: engine.Process{Bin: bin, StateDir: state, Wrap: sb.Wrap, Tap: tap, KillGrace: time.Second}, Profile: ag.profile, CacheDir: cache, Credentials: acp.EnvCredentials{Profile: ag.profile, BaseURL: sb.BaseURL}},
						engine.Key{Engine: ag.profile.Type})
				},
				Model:       ag.model,
				Prefix:      "record-" + string(ag.profile.Type) + "-",
				TurnTimeout: recordTimeout,
				Settle:      200 * time.Millisecond, // late updates of the turn
			}, recordings)
		})
	}
}

// recordTimeout bounds each recorded turn (Qwen and OpenCode retry a 5xx
// for over a minute before they report it).
var recordTimeout = durationEnv("RECORD_TIMEOUT", 100*time.Second)

func durationEnv(k string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(os.Getenv(k)); err == nil {
		return d
	}
	return def
}
