package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestEditJSONLRewritesOnlyWhatChanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	in := "{\"cwd\":\"/a\",\"n\":1}\nnot json\n{\"n\":2}\n{\"cwd\":\"/a\"}"
	if err := os.WriteFile(path, []byte(in), 0o640); err != nil {
		t.Fatal(err)
	}
	relocate := func(_ int, rec map[string]json.RawMessage) bool { return SetString(rec, "cwd", "/b", false) }
	if err := EditJSONL(path, relocate); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if want := "{\"cwd\":\"/b\",\"n\":1}\nnot json\n{\"n\":2}\n{\"cwd\":\"/b\"}"; string(got) != want {
		t.Errorf("EditJSONL = %q, want %q", got, want)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want 0640 kept", fi.Mode().Perm())
	}
	// Nothing left to change: the file is not replaced.
	before, _ := os.Stat(path)
	if err := EditJSONL(path, relocate); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Stat(path); !os.SameFile(before, after) {
		t.Error("a file with nothing to change was replaced")
	}
	if err := EditJSONL(filepath.Join(t.TempDir(), "missing.jsonl"), relocate); !os.IsNotExist(err) {
		t.Errorf("EditJSONL of a missing file = %v, want not-exist", err)
	}
}

func TestPlainName(t *testing.T) {
	tests := []struct {
		give string
		want bool
	}{
		{"a9d2656d-e727-4520-9011-da321ee5d34d", true},
		{"", false}, {".", false}, {"..", false}, {"../x", false}, {"a/b", false}, {`a\b`, false}, {"a\x00", false},
	}
	for _, tt := range tests {
		if got := PlainName(tt.give); got != tt.want {
			t.Errorf("PlainName(%q) = %v, want %v", tt.give, got, tt.want)
		}
	}
}
