package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzDecodeOutput checks that DecodeOutput never panics, refuses only with a
// *DecodeError, and that what it accepts encodes, decodes again and encodes
// to the same bytes; an Unknown encodes to exactly the compacted input. The
// seed corpus is testdata/fuzz/FuzzDecodeOutput (see TestFuzzCorpus).
func FuzzDecodeOutput(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := DecodeOutput(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeOutput(%q) err = %v (%T), want a *DecodeError", data, err, err)
			}
			return
		}
		b1, err := EncodeOutput(o)
		if err != nil {
			t.Fatalf("EncodeOutput(DecodeOutput(%q)) err = %v", data, err)
		}
		if u, ok := o.(Unknown); ok {
			var c bytes.Buffer
			_ = json.Compact(&c, data)
			if !bytes.Equal(b1, c.Bytes()) || !bytes.Equal(u.Raw, c.Bytes()) {
				t.Fatalf("Unknown re-encoded %q, want the compacted input %q", b1, c.Bytes())
			}
		}
		checkStable(t, b1, func(b []byte) ([]byte, error) {
			o, err := DecodeOutput(b)
			if err != nil {
				return nil, err
			}
			return EncodeOutput(o)
		})
	})
}

// FuzzDecodeChatEvent is FuzzDecodeOutput for chat events.
func FuzzDecodeChatEvent(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := DecodeChatEvent(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("DecodeChatEvent(%q) err = %v (%T), want a *DecodeError", data, err, err)
			}
			return
		}
		b1, err := ev.MarshalJSON()
		if err != nil {
			t.Fatalf("encode(DecodeChatEvent(%q)) err = %v", data, err)
		}
		checkStable(t, b1, func(b []byte) ([]byte, error) {
			ev, err := DecodeChatEvent(b)
			if err != nil {
				return nil, err
			}
			return ev.MarshalJSON()
		})
	})
}

// checkStable fails unless roundTrip(b1) decodes and encodes back to b1.
func checkStable(t *testing.T, b1 []byte, roundTrip func([]byte) ([]byte, error)) {
	t.Helper()
	b2, err := roundTrip(b1)
	if err != nil {
		t.Fatalf("decode of our own encoding %q: %v", b1, err)
	}
	if !bytes.Equal(b1, b2) {
		t.Fatalf("encoding is not stable:\n first %q\nsecond %q", b1, b2)
	}
}

// fuzzSeeds are malformed or tricky inputs added to the goldens in the seed
// corpus.
var fuzzSeeds = map[string][]string{
	"FuzzDecodeOutput": {
		`{"type":"assistant","content":[{"type":"tool_use","input":[]}]}`,
		`{"type":"stream_event","event":"middle"}`,
		`{"type":"run_state","state":"bogus"}`,
		`{"type":`,
		`[]`,
		`{"type":"user","createdAt":"9999-12-31T23:59:59-01:00"}`,
		`{"type":"user","content":[{"type":"future","x":"\u003c\u2028"}],"sessionId":null}`,
		`{"type":"result","subtype":"success","totalCostUsd":-0,"usage":null}`,
		`{"type":"system_init","mcpServers":[{"name":"a","status":"error"}]}`,
		"{\"type\":\"x\\ud800\",\"raw\":\"\xff\"}", // a lone surrogate and a byte that is not UTF-8
		`{"type":"assistant","type":"reasoning","text":"dup"}`,
	},
	"FuzzDecodeChatEvent": {
		`{"type":"chat:partial","data":{"eventType":"middle"}}`,
		`{"type":"chat:message","data":{"message":{"type":"run_state","state":"running"}}}`,
		`{"type":"chat:future","source":null,"data":{"a":"<&>"}}`,
		`{"type":"chat:complete"}`,
	},
	"FuzzDecodeEngineModel": {
		`{"id":"m","engine":"scripted","capabilities":{"reasoningControl":{"levels":[],"default":""}}}`,
		`{"id":"m","engine":"codex","cost":{"input":1e400}}`,
		`{"id":"m","engine":"pi","modalities":{"input":["text","text"],"output":null},"account":null}`,
		`{"id":"","engine":"cursor","limit":{"input":-1,"output":9223372036854775808}}`,
	},
}

// TestFuzzCorpus keeps the committed seed corpus in step with the goldens:
// with -update it writes testdata/fuzz/<Fuzz>/ from the golden files and
// fuzzSeeds; otherwise it checks the files are there and current.
func TestFuzzCorpus(t *testing.T) {
	for fuzz, dir := range map[string]string{"FuzzDecodeOutput": "output", "FuzzDecodeChatEvent": "chat", "FuzzDecodeEngineModel": "models"} {
		want := map[string][]byte{}
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c bytes.Buffer
			if err := json.Compact(&c, b); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want["golden-"+strings.TrimSuffix(filepath.Base(f), ".json")] = c.Bytes()
		}
		for i, s := range fuzzSeeds[fuzz] {
			want[fmt.Sprintf("seed-%02d", i)] = []byte(s)
		}
		for name, data := range want {
			path := filepath.Join("testdata", "fuzz", fuzz, name)
			entry := fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", data)
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, entry, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, entry) {
				t.Errorf("seed corpus entry %s is missing or stale (run go test -update)", path)
			}
		}
	}
}
