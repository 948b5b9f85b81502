package claude_test

import (
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/claude"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// FuzzDecodeLine feeds arbitrary lines to the decoder and the converter:
// neither may panic, and whatever the converter emits must encode. The seed
// corpus is every line of the recorded transcripts plus the committed
// corpus in testdata/fuzz.
func FuzzDecodeLine(f *testing.F) {
	enginetest.TranscriptLines(f, func(line []byte) { f.Add(line) })
	f.Fuzz(func(t *testing.T, line []byte) {
		l, err := claude.DecodeLine(line)
		if err != nil {
			return
		}
		c := &claude.Converter{}
		for _, o := range append(c.Convert(l), c.Finish()...) {
			if _, err := events.EncodeOutput(o); err != nil {
				t.Fatalf("Convert(%s) gave an output that does not encode: %v", line, err)
			}
		}
	})
}
