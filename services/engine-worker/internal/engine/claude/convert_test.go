package claude_test

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
// (a new converter), as in the adapter. Every complete turn must also obey
// the event contract's structural rules.
func TestConvertGolden(t *testing.T) {
	if *record {
		t.Run("record", recordTranscripts)
	}
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) < 10 {
		t.Fatalf("found %d transcripts in testdata, want the captures and the recordings", len(files))
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			turns := convertFile(t, file)
			var got []json.RawMessage
			for i, turn := range turns {
				if complete := len(turn) > 0 && turn[len(turn)-1].OutputType() == events.TypeResult; complete && hasInit(turn) {
					for _, err := range enginetest.CheckTurn(events.EngineClaudeCode, turn, true) {
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
	conv := &claude.Converter{Now: fixedNow}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"_sent"`)) {
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

func hasInit(outs []events.Output) bool {
	_, ok := outs[0].(events.SystemInit)
	return ok
}
