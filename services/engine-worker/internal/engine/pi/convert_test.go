package pi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

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
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) < 8 {
		t.Fatalf("found %d transcripts in testdata, want the captures and the recordings", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			var got []json.RawMessage
			for i, turn := range convertFile(t, file) {
				if len(turn) > 0 && turn[len(turn)-1].OutputType() == events.TypeResult {
					for _, err := range enginetest.CheckTurn(events.EnginePi, turn, true) {
						t.Errorf("turn %d: %v", i, err)
					}
				}
				for _, o := range turn {
					b, err := events.EncodeOutput(o)
					if err != nil {
						t.Fatalf("encode %s: %v", o.OutputType(), err)
					}
					got = append(got, b)
				}
			}
			gotJSON, _ := json.MarshalIndent(got, "", "  ")
			golden := filepath.Join("testdata", name+".golden.json")
			if *update {
				if err := os.WriteFile(golden, append(gotJSON, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -run TestConvertGolden -update)", err)
			}
			if diff := cmp.Diff(strings.TrimSpace(string(want)), strings.TrimSpace(string(gotJSON))); diff != "" {
				t.Errorf("outputs differ from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// convertFile converts a transcript, one []Output per turn.
func convertFile(t *testing.T, file string) [][]events.Output {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var turns [][]events.Output
	var cur []events.Output
	session := "transcript"
	var conv *pi.Converter
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"_sent"`)) {
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
