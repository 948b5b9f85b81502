package enginetest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"clopen.dev/pkg/events"
)

// Goldens is an adapter's converter golden test; Golden runs it.
type Goldens struct {
	// Engine is the type the turns are checked against.
	Engine events.EngineType
	// MinFiles is the fewest transcripts testdata may hold: the reference
	// captures and the recordings.
	MinFiles int
	// Convert replays one transcript through the adapter's converter as
	// the adapter drives it and returns one []Output per turn. lines are
	// all the transcript's lines, the host's ({"_sent": …}) too.
	Convert func(t *testing.T, name string, lines [][]byte) [][]events.Output
	// Check, when set, is what a turn of transcript name breaks of the
	// event contract's structural rules (see CheckTurn). Without it a turn
	// ending in a result is checked whole for Engine, and other turns are
	// not checked.
	Check func(name string, turn []events.Output) []error
	// Update rewrites the golden files instead of comparing with them.
	Update bool
}

// Golden converts every transcript in testdata (testdata/<name>.jsonl)
// with g.Convert and compares the encoded outputs with
// testdata/<name>.golden.json, one subtest per transcript. A transcript
// with no turn fails, and so does every turn that breaks the structural
// rules (CheckTurn).
func Golden(t *testing.T, g Goldens) {
	t.Helper()
	files, _ := filepath.Glob("testdata/*.jsonl")
	if len(files) < g.MinFiles {
		t.Fatalf("found %d transcripts in testdata, want the captures and the recordings (%d at least)", len(files), g.MinFiles)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
		t.Run(name, func(t *testing.T) {
			turns := g.Convert(t, name, readLines(t, file))
			if len(turns) == 0 {
				t.Fatal("no turn in the transcript")
			}
			var got []json.RawMessage
			for i, turn := range turns {
				for _, err := range g.check(name, turn) {
					t.Errorf("turn %d: %v", i, err)
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
			if g.Update {
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

func (g Goldens) check(name string, turn []events.Output) []error {
	if g.Check != nil {
		return g.Check(name, turn)
	}
	if Complete(turn) {
		return CheckTurn(g.Engine, turn, true)
	}
	return nil
}

// Complete reports whether a turn's outputs end in its result.
func Complete(turn []events.Output) bool {
	return len(turn) > 0 && turn[len(turn)-1].OutputType() == events.TypeResult
}

// HostLine reports whether a transcript line is one the host wrote
// ({"_sent": …}) rather than one the CLI did.
func HostLine(line []byte) bool { return bytes.HasPrefix(line, []byte(`{"_sent"`)) }
