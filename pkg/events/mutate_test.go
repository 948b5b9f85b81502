package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestMutatedGoldens is a structure-aware complement to the fuzzers, which
// rarely produce well-formed JSON with the right keys: it replaces every
// value of every golden, at every depth, by each of a set of JSON values and
// checks the fuzz properties (a *DecodeError or a stable re-encoding).
func TestMutatedGoldens(t *testing.T) {
	replacements := []any{
		nil, "", "x", "<&>\u2028", json.Number("0"), json.Number("-1"), json.Number("1.5"),
		json.Number("1e400"), json.Number("18446744073709551616"), true, []any{}, []any{"x", nil},
		map[string]any{}, map[string]any{"type": "text"}, "0000-01-01T00:00:00+01:00", "2026-01-01T00:00:00.1234567891Z",
	}
	decoders := map[string]func([]byte) ([]byte, error){
		"output": func(b []byte) ([]byte, error) {
			o, err := DecodeOutput(b)
			if err != nil {
				return nil, err
			}
			return EncodeOutput(o)
		},
		"chat": func(b []byte) ([]byte, error) {
			ev, err := DecodeChatEvent(b)
			if err != nil {
				return nil, err
			}
			return ev.MarshalJSON()
		},
	}
	runs := 0
	for dir, roundTrip := range decoders {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			dec := json.NewDecoder(bytes.NewReader(src))
			dec.UseNumber()
			if err := dec.Decode(&doc); err != nil {
				t.Fatal(err)
			}
			for _, r := range replacements {
				for _, mutated := range mutations(doc, r) {
					data, err := json.Marshal(mutated)
					if err != nil {
						t.Fatal(err)
					}
					runs++
					b1, err := roundTrip(data)
					if err != nil {
						var de *DecodeError
						if !errors.As(err, &de) {
							t.Errorf("%s: decode(%s) err = %v (%T), want a *DecodeError", f, data, err, err)
						}
						continue
					}
					b2, err := roundTrip(b1)
					if err != nil || !bytes.Equal(b1, b2) {
						t.Errorf("%s: not stable for %s:\n first %s\nsecond %s (%v)", f, data, b1, b2, err)
					}
				}
			}
		}
	}
	t.Logf("%d mutations", runs)
	if runs < 1000 {
		t.Errorf("only %d mutations ran", runs)
	}
}

// mutations returns copies of doc with one value (object member or array
// element, at any depth) replaced by r.
func mutations(doc, r any) []any {
	var out []any
	switch v := doc.(type) {
	case map[string]any:
		for k, child := range v {
			out = append(out, withMember(v, k, r))
			for _, m := range mutations(child, r) {
				out = append(out, withMember(v, k, m))
			}
		}
	case []any:
		for i, child := range v {
			out = append(out, withElem(v, i, r))
			for _, m := range mutations(child, r) {
				out = append(out, withElem(v, i, m))
			}
		}
	}
	return out
}

func withMember(m map[string]any, key string, v any) map[string]any {
	c := make(map[string]any, len(m))
	for k, x := range m {
		c[k] = x
	}
	c[key] = v
	return c
}

func withElem(s []any, i int, v any) []any {
	c := append([]any(nil), s...)
	c[i] = v
	return c
}
