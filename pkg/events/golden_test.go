package events

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata golden files and the fuzz seed corpus from the value tables")

// golden checks one golden file against its expected value: decoding the file
// gives want, and encoding the decoded value gives the file's bytes,
// compacted. With -update it first writes the file from want.
func golden[T any](t *testing.T, path string, want T, encode func(T) ([]byte, error), decode func([]byte) (T, error)) {
	t.Helper()
	if *update {
		b, err := encode(want)
		if err != nil {
			t.Fatalf("encode %s: %v", path, err)
		}
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			t.Fatalf("indent %s: %v", path, err)
		}
		out.WriteByte('\n')
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run go test -update to create it): %v", err)
	}
	var canonical bytes.Buffer
	if err := json.Compact(&canonical, file); err != nil {
		t.Fatalf("%s is not JSON: %v", path, err)
	}
	got, err := decode(file)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("decode %s = value, want the table's value (-want +got):\n%s", path, diff(goString(want), goString(got)))
	}
	again, err := encode(got)
	if err != nil {
		t.Fatalf("encode decoded %s: %v", path, err)
	}
	if !bytes.Equal(again, canonical.Bytes()) {
		t.Errorf("encode(decode(%s)) differs from the golden (-want +got):\n%s", path, diff(indent(canonical.Bytes()), indent(again)))
	}
}

func TestGoldenOutputs(t *testing.T) {
	for _, name := range sortedKeys(goldenOutputs) {
		t.Run(name, func(t *testing.T) {
			golden(t, filepath.Join("testdata", "output", name+".json"), goldenOutputs[name], EncodeOutput, DecodeOutput)
		})
	}
}

func TestGoldenBlocks(t *testing.T) {
	encode := func(b Block) ([]byte, error) { return b.MarshalJSON() }
	for _, name := range sortedKeys(goldenBlocks) {
		t.Run(name, func(t *testing.T) {
			golden(t, filepath.Join("testdata", "blocks", name+".json"), goldenBlocks[name], encode, DecodeBlock)
		})
	}
}

func TestGoldenChatEvents(t *testing.T) {
	encode := func(ev ChatEvent) ([]byte, error) { return ev.MarshalJSON() }
	for _, name := range sortedKeys(goldenChats) {
		t.Run(name, func(t *testing.T) {
			golden(t, filepath.Join("testdata", "chat", name+".json"), goldenChats[name], encode, DecodeChatEvent)
		})
	}
}

func TestGoldenEnvelope(t *testing.T) {
	encode := func(e Envelope) ([]byte, error) { return e.MarshalJSON() }
	golden(t, filepath.Join("testdata", "envelope.json"), goldenEnvelope, encode, DecodeEnvelope)
}

// TestGoldensCoverEveryVariant keeps the golden tables complete: every
// Output type, result subtype, stream event kind, block type and chat event
// type has a golden, and every golden file has an expected value.
func TestGoldensCoverEveryVariant(t *testing.T) {
	seen := map[string]bool{}
	for _, o := range goldenOutputs {
		key := o.OutputType()
		switch v := o.(type) {
		case Result:
			key += "/" + string(v.Subtype)
		case StreamEvent:
			key += "/" + string(v.Event)
		case Unknown:
			key = "unknown"
		}
		seen[key] = true
	}
	var want []string
	for typ := range outputDecoders {
		want = append(want, typ)
	}
	want = append(want, "unknown")
	for _, s := range []ResultSubtype{ResultSuccess, ResultErrorMaxTurns, ResultErrorDuringExecution, ResultErrorMaxBudget} {
		want = append(want, TypeResult+"/"+string(s))
	}
	for _, k := range []StreamEventKind{StreamStart, StreamStop, StreamDelta} {
		want = append(want, TypeStreamEvent+"/"+string(k))
	}
	for _, b := range goldenBlocks {
		seen["block "+b.BlockType()] = true
	}
	for typ := range blockDecoders {
		want = append(want, "block "+typ)
	}
	for _, ev := range goldenChats {
		seen["chat "+string(ev.Type)] = true
	}
	for typ := range chatDecoders {
		want = append(want, "chat "+string(typ))
	}
	for _, w := range want {
		if !seen[w] && w != TypeResult && w != TypeStreamEvent {
			t.Errorf("no golden for %s", w)
		}
	}
	for dir, names := range map[string][]string{
		"output": sortedKeys(goldenOutputs), "blocks": sortedKeys(goldenBlocks), "chat": sortedKeys(goldenChats),
	} {
		files, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		for _, f := range files {
			if name := strings.TrimSuffix(filepath.Base(f), ".json"); !contains(names, name) {
				t.Errorf("%s has no expected value in the table", f)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// goString renders v for a diff: %#v with one field per line.
func goString(v any) string {
	s := fmt.Sprintf("%#v", v)
	s = strings.ReplaceAll(s, ", ", ",\n")
	return strings.ReplaceAll(s, "{", "{\n")
}

func indent(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// diff is a small line diff: the lines of want and got around the first
// place they differ, marked - and +.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	i := 0
	for i < len(w) && i < len(g) && w[i] == g[i] {
		i++
	}
	jw, jg := len(w), len(g)
	for jw > i && jg > i && w[jw-1] == g[jg-1] {
		jw--
		jg--
	}
	var b strings.Builder
	for k := max(0, i-3); k < i; k++ {
		fmt.Fprintf(&b, "  %s\n", w[k])
	}
	for _, l := range w[i:jw] {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	for _, l := range g[i:jg] {
		fmt.Fprintf(&b, "+ %s\n", l)
	}
	for k := jw; k < min(len(w), jw+3); k++ {
		fmt.Fprintf(&b, "  %s\n", w[k])
	}
	return b.String()
}
