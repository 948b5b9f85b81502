package pi_test

import (
	"encoding/json"
	"os"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine/enginetest"
	"clopen.dev/services/engine-worker/internal/engine/pi"
)

// FuzzDecodePiLine feeds arbitrary lines to the decoder and the converter:
// neither may panic, and whatever the converter emits must encode. The seed
// corpus is every line of the transcripts plus the committed corpus in
// testdata/fuzz.
func FuzzDecodePiLine(f *testing.F) {
	enginetest.TranscriptLines(f, func(line []byte) {
		if len(line) < 64<<10 { // the seeds stay small enough to mutate
			f.Add(line)
		}
	})
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := pi.DecodeLine(line)
		if err != nil {
			return
		}
		c := &pi.Converter{Model: "m", Provider: "anthropic"}
		c.SetSession("session")
		outs := c.Init()
		outs = append(outs, c.Convert(ev)...)
		outs = append(outs, c.Convert(ev)...) // twice: a repeat must not break pairing or ids
		outs = append(outs, c.Finish()...)
		outs = append(outs, c.Interrupted()...)
		for _, o := range outs {
			if _, err := events.EncodeOutput(o); err != nil {
				t.Fatalf("Convert(%s) gave an output that does not encode: %v", line, err)
			}
		}
		_ = pi.CanonicalInput(pi.ToolName(ev.ToolName), ev.Args)
	})
}

// FuzzDecodeModels feeds arbitrary answers of get_available_models to the
// decoder and the catalog mapping: neither may panic, every entry must
// encode, and a requested level must clamp to one of the entry's levels
// (or off, for a model without a reasoning control). The seed corpus is the
// pinned pi's answer plus the committed corpus in testdata/fuzz.
func FuzzDecodeModels(f *testing.F) {
	data, err := os.ReadFile("testdata/get_available_models.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data, "xhigh")
	f.Fuzz(func(t *testing.T, data []byte, level string) {
		models, err := pi.DecodeModels(data)
		if err != nil {
			return
		}
		for _, m := range models {
			if m.ID == "" {
				continue // the catalog skips them
			}
			e := m.Entry()
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("entry of %s does not encode: %v", data, err)
			}
			if _, err := events.DecodeEngineModel(b); err != nil {
				t.Fatalf("entry %s does not decode: %v", b, err)
			}
			got := pi.ClampThinking(m, level)
			if rc := e.Capabilities.ReasoningControl; rc == nil && got != "off" || rc != nil && !rc.Has(got) {
				t.Fatalf("ClampThinking(%s, %q) = %q, not one of the levels %+v", m.ID, level, got, rc)
			}
		}
	})
}
