package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/natstest"
)

func newStore(t testing.TB) Store {
	t.Helper()
	ns := natstest.Start(t)
	_, js := natstest.Connect(t, ns)
	st, err := ObjectStore(context.Background(), js, Bucket, 1)
	if err != nil {
		t.Fatalf("ObjectStore: %v", err)
	}
	return st
}

func write(t testing.TB, dir, rel, content string, perm fs.FileMode) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
}

// listing describes a directory: one line per path with its kind, mode and
// content or link target.
func listing(t testing.TB, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			link, _ := os.Readlink(p)
			lines = append(lines, rel+" -> "+link)
		case d.IsDir():
			lines = append(lines, fmt.Sprintf("%s/ %v", rel, info.Mode().Perm()))
		default:
			data, _ := os.ReadFile(p)
			lines = append(lines, fmt.Sprintf("%s %v %q", rel, info.Mode().Perm(), data))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func sampleTree(t testing.TB) string {
	dir := t.TempDir()
	write(t, dir, "README.md", "hello\n", 0o644)
	write(t, dir, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o755)
	write(t, dir, "src/a/b/c/deep.go", "package c\n", 0o600)
	write(t, dir, "src/copy.go", "package c\n", 0o644) // same content as deep.go
	write(t, dir, "empty.txt", "", 0o644)
	// Only empty directories keep their mode; the others are made 0755.
	if err := os.MkdirAll(filepath.Join(dir, "logs/none"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "logs/none"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../README.md", filepath.Join(dir, "bin/readme")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCaptureRestoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := sampleTree(t)
	m, st, err := s.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatalf("Capture: %v", err)
	}
	if st.Files != 5 || st.NewFiles != 4 || st.Packs != 1 || st.Skipped != 1 {
		t.Errorf("Capture stats = %+v, want 5 files, 4 new (one duplicate), 1 pack, 1 skipped symlink", st)
	}
	loaded, err := s.Load(ctx, m.ID)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	dst := t.TempDir()
	rst, err := s.Restore(ctx, loaded, map[string]string{"workspace": dst})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if rst.Packs != 1 {
		t.Errorf("Restore fetched %d packs, want 1", rst.Packs)
	}
	os.Remove(filepath.Join(src, "escape"))
	if got, want := listing(t, dst), listing(t, src); got != want {
		t.Errorf("restored tree:\n%s\nwant:\n%s", got, want)
	}
	rc, e, err := s.Open(ctx, loaded, "workspace", "bin/run.sh")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	var buf bytes.Buffer
	buf.ReadFrom(rc)
	rc.Close()
	if buf.String() != "#!/bin/sh\necho hi\n" || e.Mode != 0o755 {
		t.Errorf("Open = %q mode %v", buf.String(), e.Mode)
	}
	if _, _, err := s.Open(ctx, loaded, "workspace", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Open(missing) = %v, want ErrNotFound", err)
	}
}

func TestIncrementalCaptureUploadsOneFile(t *testing.T) {
	ctx := context.Background()
	cache, err := NewCache(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s := &Snapshots{Store: newStore(t), Tenant: "acme", Cache: cache, PackSize: 256 << 10}
	src := t.TempDir()
	big := strings.Repeat("x", 4000)
	for i := range 500 {
		write(t, src, fmt.Sprintf("d%d/f%d.txt", i%10, i), fmt.Sprintf("%d%s", i, big), 0o644)
	}
	trees := map[string]Tree{"workspace": {Dir: src}}
	m1, st1, err := s.Capture(ctx, nil, trees)
	if err != nil {
		t.Fatal(err)
	}
	if st1.Packs < 5 || st1.Uploaded < 2_000_000 {
		t.Fatalf("first capture %+v, want every file uploaded in several packs", st1)
	}
	write(t, src, "d3/f3.txt", "changed", 0o644)
	m2, st2, err := s.Capture(ctx, m1, trees)
	if err != nil {
		t.Fatal(err)
	}
	if st2.NewFiles != 1 || st2.Packs != 1 || st2.Uploaded > 40_000 {
		t.Errorf("incremental capture %+v, want 1 new file in 1 pack, a few KB uploaded", st2)
	}
	if m2.Parent != m1.ID {
		t.Errorf("Parent = %s, want %s", m2.Parent, m1.ID)
	}
	m3, st3, err := s.Capture(ctx, m2, trees)
	if err != nil {
		t.Fatal(err)
	}
	if m3.ID != m2.ID || st3.Uploaded != 0 || st3.Files != 500 {
		t.Errorf("no-op capture = %s %+v, want %s, nothing uploaded, 500 files", m3.ID, st3, m2.ID)
	}
	dst := t.TempDir()
	if _, err := s.Restore(ctx, m2, map[string]string{"workspace": dst}); err != nil {
		t.Fatal(err)
	}
	if got, want := listing(t, dst), listing(t, src); got != want {
		t.Errorf("restore of incremental snapshot differs")
	}
	again, err := s.Restore(ctx, m2, map[string]string{"workspace": dst})
	if err != nil {
		t.Fatal(err)
	}
	if again.Packs != 0 || again.NewFiles != 0 || again.Files != 500 {
		t.Errorf("restore over an equal dir = %+v, want no packs fetched, nothing written", again)
	}
	back, err := s.Restore(ctx, m1, map[string]string{"workspace": dst})
	if err != nil {
		t.Fatal(err)
	}
	if back.Packs != 1 || back.NewFiles != 1 || back.Downloaded > 256<<10 {
		t.Errorf("restore of the previous snapshot = %+v, want one file from one pack", back)
	}
}

func TestRestoreReplacesStaleAndExtra(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := sampleTree(t)
	os.Remove(filepath.Join(src, "escape"))
	m, _, err := s.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	outside := t.TempDir()
	write(t, outside, "victim", "keep", 0o644)
	write(t, dst, "README.md", "stale\n", 0o644)
	write(t, dst, "bin/run.sh", "#!/bin/sh\necho hi\n", 0o644) // content right, mode wrong
	write(t, dst, "extra/old.txt", "gone", 0o644)
	write(t, dst, "empty.txt/inside", "a dir where a file belongs", 0o644)
	if err := os.Symlink(outside, filepath.Join(dst, "src")); err != nil { // a link where a dir belongs
		t.Fatal(err)
	}
	st, err := s.Restore(ctx, m, map[string]string{"workspace": dst})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, want := listing(t, dst), listing(t, src); got != want {
		t.Errorf("restored tree:\n%s\nwant:\n%s", got, want)
	}
	if got := listing(t, outside); got != `victim -rw-r--r-- "keep"` {
		t.Errorf("outside dir changed: %s", got)
	}
	if st.NewFiles != 4 { // README, deep.go, copy.go, empty.txt; run.sh only chmod'ed
		t.Errorf("Restore wrote %d files, want 4", st.NewFiles)
	}
}

func TestMatchTreeIsAdditive(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := t.TempDir()
	write(t, src, "s1.jsonl", "one", 0o644)
	write(t, src, "other.log", "not matched", 0o644)
	match := func(rel string) bool { return strings.HasSuffix(rel, ".jsonl") }
	m, _, err := s.Capture(ctx, nil, map[string]Tree{"state": {Dir: src, Match: match}})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Trees["state"]) != 1 || !m.Partial["state"] {
		t.Fatalf("tree = %+v partial %v, want only s1.jsonl, partial", m.Trees["state"], m.Partial)
	}
	dst := t.TempDir()
	write(t, dst, "s0.jsonl", "another session", 0o644)
	if _, err := s.Restore(ctx, m, map[string]string{"state": dst}); err != nil {
		t.Fatal(err)
	}
	want := `s0.jsonl -rw-r--r-- "another session"` + "\n" + `s1.jsonl -rw-r--r-- "one"`
	if got := listing(t, dst); got != want {
		t.Errorf("restored:\n%s\nwant:\n%s", got, want)
	}
}

func TestSkipIsNeverDeleted(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := t.TempDir()
	write(t, src, "main.go", "package main\n", 0o644)
	write(t, src, "node_modules/x.js", "cache", 0o644)
	tree := Tree{Dir: src, Skip: func(rel string, isDir bool) bool { return isDir && rel == "node_modules" }}
	m, _, err := s.Capture(ctx, nil, map[string]Tree{"workspace": tree})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Trees["workspace"]) != 1 {
		t.Fatalf("captured %+v, want main.go only", m.Trees["workspace"])
	}
	dst := t.TempDir()
	write(t, dst, "node_modules/y.js", "local cache", 0o644)
	write(t, dst, "stray.txt", "x", 0o644)
	tree.Dir = dst
	if _, err := s.RestoreTrees(ctx, m, map[string]Tree{"workspace": tree}); err != nil {
		t.Fatal(err)
	}
	want := `main.go -rw-r--r-- "package main\n"` + "\n" + "node_modules/ -rwxr-xr-x\n" + `node_modules/y.js -rw-r--r-- "local cache"`
	if got := listing(t, dst); got != want {
		t.Errorf("restored:\n%s\nwant:\n%s", got, want)
	}
}
