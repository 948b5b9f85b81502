package codex_test

import (
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/codex"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
)

// FuzzDecodeCodexLine feeds arbitrary lines to the decoder and the
// converter: neither may panic, and whatever the converter emits must
// encode. The seed corpus is every line of the transcripts plus the
// committed corpus in testdata/fuzz.
func FuzzDecodeCodexLine(f *testing.F) {
	enginetest.TranscriptLines(f, func(line []byte) { f.Add(line) })
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := codex.DecodeLine(line)
		if err != nil {
			return
		}
		c := &codex.Converter{Model: "gpt-5.5", MCPServers: []string{"probe"}}
		c.SetThread("thread")
		outs := append(c.Convert(m), c.Convert(m)...) // twice: a repeat must not break pairing or ids
		outs = append(outs, c.Finish()...)
		outs = append(outs, c.Interrupted()...)
		for _, o := range outs {
			if _, err := events.EncodeOutput(o); err != nil {
				t.Fatalf("Convert(%s) gave an output that does not encode: %v", line, err)
			}
		}
		_ = codex.UnwrapShell(string(line))
	})
}
