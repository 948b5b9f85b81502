package snapshot

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Entries for hand-built manifests: content is hashed, never stored, so
// Merge is tested on what it reads, the entries.
func fileEntry(p, content string, mode fs.FileMode, pack string) Entry {
	sum := sha256.Sum256([]byte(content))
	return Entry{Path: p, Mode: mode, Size: int64(len(content)), SHA: hexSum(sum), Pack: hexSum(sha256.Sum256([]byte(pack)))}
}

func f(p, content string) Entry   { return fileEntry(p, content, 0o644, "pack-1") }
func exe(p, content string) Entry { return fileEntry(p, content, 0o755, "pack-1") }
func link(p, target string) Entry { return Entry{Path: p, Mode: fs.ModeSymlink, Link: target} }
func emptyDir(p string) Entry     { return Entry{Path: p, Mode: fs.ModeDir | 0o755} }
func tree(es ...Entry) *Manifest  { return &Manifest{Trees: map[string][]Entry{"workspace": es}} }
func theirsOf(es ...Entry) *Manifest {
	m := tree(es...)
	m.ID = hexSum(sha256.Sum256([]byte(fmt.Sprint(es))))
	return m
}

func TestMergeTable(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	base := tree(f("a", "1"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a"))
	cases := []struct {
		name         string
		ours, theirs *Manifest
		want         []Entry  // the merged tree, when it merges
		conflicts    []string // path:ours:theirs
	}{
		{name: "ours unchanged keeps theirs",
			ours: base, theirs: theirsOf(f("a", "2"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a"))},
		{name: "ours changes, adds and deletes; theirs untouched",
			ours:   tree(f("a", "2"), f("c", "1"), emptyDir("d"), link("l", "c"), f("new", "x")),
			theirs: theirsOf(base.Trees["workspace"]...),
			want:   []Entry{f("a", "2"), f("c", "1"), emptyDir("d"), link("l", "c"), f("new", "x")}},
		{name: "changes on both sides to different paths",
			ours:   tree(f("a", "2"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a")),
			theirs: theirsOf(f("a", "1"), f("b", "1"), emptyDir("d"), link("l", "a"), f("t", "x")),
			want:   []Entry{f("a", "2"), f("b", "1"), emptyDir("d"), link("l", "a"), f("t", "x")}},
		{name: "identical changes, one stored in another pack",
			ours:   tree(f("a", "2"), f("b", "1"), emptyDir("d"), link("l", "a"), f("n", "x"), f("o", "o")),
			theirs: theirsOf(fileEntry("a", "2", 0o644, "pack-2"), f("b", "1"), emptyDir("d"), link("l", "a"), f("n", "x"), f("z", "z")),
			want:   []Entry{fileEntry("a", "2", 0o644, "pack-2"), f("b", "1"), emptyDir("d"), link("l", "a"), f("n", "x"), f("o", "o"), f("z", "z")}},
		{name: "a file into an empty directory of the base",
			ours:   tree(f("a", "1"), f("b", "1"), f("c", "1"), f("d/x", "x"), link("l", "a")),
			theirs: theirsOf(f("a", "1"), f("b", "1"), f("c", "1"), emptyDir("d"), emptyDir("e"), link("l", "a")),
			want:   []Entry{f("a", "1"), f("b", "1"), f("c", "1"), f("d/x", "x"), emptyDir("e"), link("l", "a")}},
		{name: "a new empty directory the other side fills keeps theirs",
			ours:   tree(f("a", "1"), f("b", "1"), f("c", "1"), emptyDir("d"), emptyDir("e"), link("l", "a")),
			theirs: theirsOf(f("a", "1"), f("b", "1"), f("c", "1"), emptyDir("d"), f("e/y", "y"), link("l", "a"))},
		{name: "only changes theirs already has keeps theirs",
			ours:   tree(f("a", "2"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a")),
			theirs: theirsOf(fileEntry("a", "2", 0o644, "pack-2"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a"))},
		{name: "different content, mode, deletion and link",
			ours:      tree(f("a", "2"), exe("b", "1"), emptyDir("d"), link("l", "b"), f("n", "ours")),
			theirs:    theirsOf(f("a", "3"), f("b", "2"), f("c", "2"), emptyDir("d"), link("l", "c"), f("n", "theirs")),
			conflicts: []string{"a:changed:changed", "b:changed:changed", "c:deleted:changed", "l:changed:changed", "n:added:added"}},
		{name: "a file where the other side has a directory",
			ours:      tree(f("a", "1"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a"), f("x", "file")),
			theirs:    theirsOf(f("a", "1"), f("b", "1"), f("c", "1"), emptyDir("d"), link("l", "a"), f("x/y", "below")),
			conflicts: []string{"x:file:directory"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, conflicts, err := s.Merge(ctx, base, tc.ours, tc.theirs, "workspace")
			if err != nil {
				t.Fatalf("Merge: %v", err)
			}
			var got []string
			for _, c := range conflicts {
				got = append(got, c.Path+":"+c.Ours+":"+c.Theirs)
			}
			if !reflect.DeepEqual(got, tc.conflicts) {
				t.Fatalf("conflicts = %q, want %q", got, tc.conflicts)
			}
			switch {
			case tc.conflicts != nil:
				if m != nil {
					t.Errorf("a merge with conflicts returned manifest %+v", m)
				}
				return
			case tc.want == nil:
				if m != tc.theirs {
					t.Errorf("a merge without changes of ours returned %+v, want theirs itself", m)
				}
				return
			}
			if !reflect.DeepEqual(m.Trees, map[string][]Entry{"workspace": tc.want}) {
				t.Errorf("merged tree =\n%+v\nwant\n%+v", m.Trees["workspace"], tc.want)
			}
			if m.Parent != tc.theirs.ID {
				t.Errorf("merged parent = %q, want theirs %q", m.Parent, tc.theirs.ID)
			}
			loaded, err := s.Load(ctx, m.ID)
			if err != nil || !reflect.DeepEqual(loaded.Trees, m.Trees) {
				t.Errorf("Load(merged id) = %+v, %v; want the merged tree", loaded, err)
			}
		})
	}
}

func TestMergeEmptySides(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	// A session of an empty project that wrote nothing, or nothing new.
	if m, c, err := s.Merge(ctx, nil, nil, nil, "workspace"); m != nil || c != nil || err != nil {
		t.Errorf("Merge(nil, nil, nil) = %+v, %v, %v; want nothing", m, c, err)
	}
	// A session of an empty project that wrote a file.
	m, c, err := s.Merge(ctx, nil, tree(f("a", "1")), nil, "workspace")
	if err != nil || c != nil || m == nil || m.Parent != "" || !reflect.DeepEqual(m.Trees["workspace"], []Entry{f("a", "1")}) {
		t.Errorf("Merge(nil, ours, nil) = %+v, %v, %v; want ours' file", m, c, err)
	}
	// A session that deleted everything its base had, into a base that kept it.
	base := theirsOf(f("a", "1"))
	m, c, err = s.Merge(ctx, base, tree(), base, "workspace")
	if err != nil || c != nil || m == nil || len(m.Trees["workspace"]) != 0 || m.Parent != base.ID {
		t.Errorf("Merge deleting all = %+v, %v, %v; want an empty tree", m, c, err)
	}
	if _, _, err := s.Merge(ctx, nil, nil, nil, "../x"); err == nil {
		t.Error("Merge took the tree name ../x")
	}
}

// TestMergeRestores merges real captures and restores the result: the
// merged manifest's entries reach the contents both sides stored.
func TestMergeRestores(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	capture := func(prev *Manifest, files map[string]string) *Manifest {
		t.Helper()
		dir := t.TempDir()
		for p, content := range files {
			write(t, dir, p, content, 0o644)
		}
		m, _, err := s.Capture(ctx, prev, map[string]Tree{"workspace": {Dir: dir}})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	base := capture(nil, map[string]string{"a.txt": "a\n", "b.txt": "b\n", "gone.txt": "x\n"})
	ours := capture(base, map[string]string{"a.txt": "a by ours\n", "b.txt": "b\n", "src/new.go": "package src\n"})
	theirs := capture(base, map[string]string{"a.txt": "a\n", "b.txt": "b by theirs\n", "gone.txt": "x\n"})
	m, conflicts, err := s.Merge(ctx, base, ours, theirs, "workspace")
	if err != nil || conflicts != nil {
		t.Fatalf("Merge = %v, %v", conflicts, err)
	}
	loaded, err := s.Load(ctx, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if _, err := s.Restore(ctx, loaded, map[string]string{"workspace": dst}); err != nil {
		t.Fatalf("Restore(merged): %v", err)
	}
	want := strings.Join([]string{`a.txt -rw-r--r-- "a by ours\n"`, `b.txt -rw-r--r-- "b by theirs\n"`,
		"src/ -rwxr-xr-x", `src/new.go -rw-r--r-- "package src\n"`}, "\n")
	if got := listing(t, dst); got != want {
		t.Errorf("restored merge:\n%s\nwant\n%s", got, want)
	}
	// Another tenant does not see it.
	other := &Snapshots{Store: s.Store, Tenant: "other"}
	if _, err := other.Load(ctx, m.ID); err == nil {
		t.Error("another tenant loaded the merged manifest")
	}
	if _, err := os.Stat(filepath.Join(dst, "gone.txt")); err == nil {
		t.Error("gone.txt, deleted by ours, came back")
	}
}
