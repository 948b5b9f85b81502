package snapshot

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestCachePersistsAndNoticesChanges(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(t.TempDir(), "f.txt")
	if err := os.WriteFile(p, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	c.remember(p, info, "sha-one")
	if err := c.Save(); err != nil {
		t.Fatal(err)
	}
	reopened, err := NewCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sha, ok := reopened.lookup(p, info); !ok || sha != "sha-one" {
		t.Errorf("lookup after reopen = %q, %v; want sha-one, true", sha, ok)
	}
	// Same size and mtime, new content: the ctime gives it away.
	if err := os.WriteFile(p, []byte("two"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, past, past); err != nil {
		t.Fatal(err)
	}
	changed, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if sha, ok := reopened.lookup(p, changed); ok {
		t.Errorf("lookup of a rewritten file = %q, want a miss", sha)
	}
	// A file modified just now is not cached: it could change again
	// within the same mtime tick.
	reopened.remember(p, changed, "sha-two")
	if err := os.Chtimes(p, time.Now(), time.Now()); err != nil {
		t.Fatal(err)
	}
	fresh, _ := os.Lstat(p)
	reopened.remember(p, fresh, "sha-fresh")
	if sha, ok := reopened.lookup(p, fresh); ok {
		t.Errorf("lookup of a just-modified file = %q, want a miss", sha)
	}
}
