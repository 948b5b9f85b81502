package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestMarkersAreExact(t *testing.T) {
	if got, want := StartMarker("SKILLS"), "<!-- CLOPEN:SKILLS:START — managed block, do not edit -->"; got != want {
		t.Errorf("StartMarker = %q, want %q", got, want)
	}
	if got, want := EndMarker("SKILLS"), "<!-- CLOPEN:SKILLS:END -->"; got != want {
		t.Errorf("EndMarker = %q, want %q", got, want)
	}
}

func TestRenderManagedBlock(t *testing.T) {
	blk := func(id, body string) string { return StartMarker(id) + "\n" + body + "\n" + EndMarker(id) + "\n" }
	tests := []struct {
		name, give, id, block, want string
	}{
		{"empty file gets just the block", "", "SKILLS", "  a\nb  ", blk("SKILLS", "a\nb")},
		{"appended after user text", "# Mine\n\nnotes\n", "SKILLS", "x", "# Mine\n\nnotes\n\n" + blk("SKILLS", "x")},
		{"replaces and moves to the end", "top\n\n" + blk("SKILLS", "old") + "\nbottom\n", "SKILLS", "new", "top\n\nbottom\n\n" + blk("SKILLS", "new")},
		{"empty block removes it and keeps user text", "top\n\n" + blk("SKILLS", "old"), "SKILLS", "  ", "top\n"},
		{"duplicate blocks all stripped", blk("SKILLS", "a") + "mid\n" + blk("SKILLS", "b"), "SKILLS", "c", "mid\n\n" + blk("SKILLS", "c")},
		{"other blocks untouched", blk("SUBAGENTS", "s"), "SKILLS", "k", blk("SUBAGENTS", "s") + "\n" + blk("SKILLS", "k")},
		{"blank runs collapsed", "a\n\n\n\n\nb", "SKILLS", "", "a\n\nb\n"},
		{"only a block, removed", blk("SKILLS", "a"), "SKILLS", "", ""},
		{"crlf normalised", "a\r\nb\r\n", "SKILLS", "", "a\nb\n"},
		{"unterminated block left as user text", StartMarker("SKILLS") + "\nx\n", "SKILLS", "", StartMarker("SKILLS") + "\nx\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RenderManagedBlock(tt.give, tt.id, tt.block); got != tt.want {
				t.Errorf("RenderManagedBlock = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWriteManagedBlockWritesOnlyOnChange(t *testing.T) {
	f := filepath.Join(t.TempDir(), "sub", "AGENTS.md")
	if changed, err := WriteManagedBlock(f, "SKILLS", ""); err != nil || changed {
		t.Fatalf("empty block on a missing file = %v, %v; want no file", changed, err)
	}
	if _, err := os.Stat(f); !os.IsNotExist(err) {
		t.Fatalf("file created for an empty block")
	}
	for i, want := range []bool{true, false} {
		changed, err := WriteManagedBlock(f, "SKILLS", "body")
		if err != nil || changed != want {
			t.Fatalf("write %d = %v, %v; want %v", i, changed, err, want)
		}
	}
	// Blocks written in a fixed order do not churn on the next sync.
	for round := range 3 {
		for _, id := range []string{"SKILLS", "SUBAGENTS", "INSTRUCTIONS"} {
			changed, err := WriteManagedBlock(f, id, id+" body")
			if err != nil {
				t.Fatal(err)
			}
			if round > 0 && changed {
				t.Errorf("round %d rewrote %s with the same content", round, id)
			}
		}
	}
	got, _ := os.ReadFile(f)
	if body, ok := ReadManagedBlock(string(got), "SUBAGENTS"); !ok || body != "SUBAGENTS body" {
		t.Errorf("ReadManagedBlock = %q, %v", body, ok)
	}
	if _, err := WriteManagedBlock(f, "bad id", "x"); err == nil {
		t.Error("invalid block id accepted")
	}
}

// TestConcurrentSyncsNeverLoseABlock races many writers of two blocks (and
// re-writers with changing content) into one memory file with user text.
func TestConcurrentSyncsNeverLoseABlock(t *testing.T) {
	f := filepath.Join(t.TempDir(), "AGENTS.md")
	user := "# My notes\n\nDo not touch this.\n"
	if err := os.WriteFile(f, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	const writers, rounds = 16, 40
	var wg sync.WaitGroup
	errs := make(chan error, writers*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := []string{"SUBAGENTS", "INSTRUCTIONS"}[w%2]
			for r := range rounds {
				if _, err := WriteManagedBlock(f, id, fmt.Sprintf("%s from writer %d round %d", id, w, r)); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f)
	got := string(b)
	if !strings.HasPrefix(got, strings.TrimSpace(user)) {
		t.Errorf("user text lost:\n%s", got)
	}
	for _, id := range []string{"SUBAGENTS", "INSTRUCTIONS"} {
		if n := strings.Count(got, StartMarker(id)); n != 1 {
			t.Errorf("%d %s blocks, want 1:\n%s", n, id, got)
		}
		if _, ok := ReadManagedBlock(got, id); !ok {
			t.Errorf("%s block lost", id)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(f), ".AGENTS.md.tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}
}
