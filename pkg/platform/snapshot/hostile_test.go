package snapshot

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRestoreRefusesHostileManifests(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := t.TempDir()
	write(t, src, "a.txt", "payload", 0o644)
	good, _, err := s.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatal(err)
	}
	file := good.Trees["workspace"][0]
	at := func(p string) Entry { e := file; e.Path = p; return e }
	link := func(p, target string) Entry { return Entry{Path: p, Mode: fs.ModeSymlink, Link: target} }
	tests := []struct {
		name string
		give []Entry
	}{
		{"dot dot", []Entry{at("../escaped.txt")}},
		{"dot dot inside", []Entry{at("x/../../escaped.txt")}},
		{"absolute", []Entry{at("/tmp/escaped.txt")}},
		{"link to absolute", []Entry{link("l", "/etc")}},
		{"link up and out", []Entry{link("sub/l", "../../etc")}},
		{"link through itself", []Entry{link("l", "."), link("m", "l/../x")}},
		{"file below a link", []Entry{link("d", "."), at("d/escaped.txt")}},
		{"file below a file", []Entry{at("a"), at("a/b")}},
		{"unsorted", []Entry{at("b"), at("a")}},
		{"device", []Entry{{Path: "dev", Mode: fs.ModeDevice}}},
		{"negative size", []Entry{{Path: "n", Mode: 0o644, Size: -1, SHA: file.SHA, Pack: file.Pack}}},
		{"bad pack", []Entry{{Path: "n", Mode: 0o644, Size: 1, SHA: file.SHA, Pack: "../other/packs/x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dst := filepath.Join(parent, "dst")
			m := &Manifest{Trees: map[string][]Entry{"workspace": tt.give}, Created: time.Now()}
			if _, err := s.Restore(ctx, m, map[string]string{"workspace": dst}); err == nil {
				t.Fatalf("Restore(%+v) succeeded, want refused", tt.give)
			}
			if got := listing(t, parent); got != "" {
				t.Errorf("Restore wrote:\n%s\nwant nothing", got)
			}
			// Stored as a manifest, Load refuses it too.
			data, err := encodeManifest(m)
			if err != nil {
				t.Fatal(err)
			}
			id := manifestID(data)
			if _, err := s.Store.Put(ctx, manifestName(s.Tenant, id), bytes.NewReader(data)); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load(ctx, id); err == nil {
				t.Errorf("Load accepted the manifest")
			}
		})
	}
}

func TestRestoreNeverWritesThroughExistingLinks(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := t.TempDir()
	write(t, src, "m/a.txt", "payload", 0o644)
	m, _, err := s.Capture(ctx, nil, map[string]Tree{"state": {Dir: src, Match: func(string) bool { return true }}})
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	dst := t.TempDir()
	// A partial tree never deletes, but a link in the way of a directory
	// is replaced rather than followed.
	if err := os.Symlink(outside, filepath.Join(dst, "m")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Restore(ctx, m, map[string]string{"state": dst}); err != nil {
		t.Fatal(err)
	}
	if got := listing(t, outside); got != "" {
		t.Errorf("wrote outside: %s", got)
	}
	if got, want := listing(t, dst), "m/ -rwxr-xr-x\n"+`m/a.txt -rw-r--r-- "payload"`; got != want {
		t.Errorf("restored:\n%s\nwant:\n%s", got, want)
	}
}

func TestTenantsAreIsolated(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	a := &Snapshots{Store: store, Tenant: "tenant-a"}
	b := &Snapshots{Store: store, Tenant: "tenant-b"}
	src := t.TempDir()
	write(t, src, "secret.txt", "a's secret", 0o644)
	m, _, err := a.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Load(ctx, m.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("b.Load(a's id) = %v, want ErrNotFound", err)
	}
	// Even holding a's manifest, b reads packs under its own prefix only.
	if _, err := b.Restore(ctx, m, map[string]string{"workspace": t.TempDir()}); !errors.Is(err, ErrNotFound) {
		t.Errorf("b.Restore(a's manifest) = %v, want ErrNotFound", err)
	}
	objs, err := store.List(ctx, "tenant-a/")
	if err != nil || len(objs) != 2 || !strings.HasPrefix(objs[0].Name, "tenant-a/manifests/") || !strings.HasPrefix(objs[1].Name, "tenant-a/packs/") {
		t.Errorf("List(tenant-a/) = %v, %v; want one manifest and one pack", objs, err)
	}
	for _, bad := range []string{"", "a/b", "..", "a..b", ".", "a b", "a*"} {
		s := &Snapshots{Store: store, Tenant: bad}
		if _, err := s.Load(ctx, m.ID); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Load with tenant %q = %v, want invalid tenant", bad, err)
		}
	}
	if _, err := a.Load(ctx, "../"+m.ID[3:]); err == nil {
		t.Errorf("Load accepted a malformed id")
	}
}

// changedPair captures a small workspace, changes it (one file edited, one
// deleted, one binary changed, one added, one kept) and captures it again.
func changedPair(t *testing.T) (s *Snapshots, m1, m2 *Manifest) {
	t.Helper()
	ctx := context.Background()
	s = &Snapshots{Store: newStore(t), Tenant: "acme"}
	src := t.TempDir()
	write(t, src, "main.go", "package main\n\nfunc main() {\n\tprintln(1)\n}\n", 0o644)
	write(t, src, "gone.txt", "one\ntwo\n", 0o644)
	write(t, src, "logo.png", "\x89PNG\x00\x01", 0o644)
	write(t, src, "same.txt", "same\n", 0o644)
	trees := map[string]Tree{"workspace": {Dir: src}}
	m1, _, err := s.Capture(ctx, nil, trees)
	if err != nil {
		t.Fatal(err)
	}
	write(t, src, "main.go", "package main\n\nfunc main() {\n\tprintln(2)\n\tprintln(3)\n\tprintln(4)\n}\n", 0o644)
	os.Remove(filepath.Join(src, "gone.txt"))
	write(t, src, "logo.png", "\x89PNG\x00\x02", 0o644)
	write(t, src, "new.txt", "a\nb", 0o644)
	m2, _, err = s.Capture(ctx, m1, trees)
	if err != nil {
		t.Fatal(err)
	}
	return s, m1, m2
}

func TestDiffAndCountLines(t *testing.T) {
	ctx := context.Background()
	s, m1, m2 := changedPair(t)
	changes := Diff(m1, m2, "workspace")
	if err := s.CountLines(ctx, m1, m2, "workspace", changes); err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "gone.txt", Kind: "deleted", Removed: 2},
		{Path: "logo.png", Kind: "changed", Binary: true},
		{Path: "main.go", Kind: "changed", Added: 3, Removed: 1},
		{Path: "new.txt", Kind: "added", Added: 2},
	}
	if len(changes) != len(want) {
		t.Fatalf("Diff = %+v, want %+v", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Errorf("change %d = %+v, want %+v", i, changes[i], want[i])
		}
	}
	if all := Diff(nil, m1, "workspace"); len(all) != 4 || all[0].Kind != "added" {
		t.Errorf("Diff(nil, m1) = %+v, want 4 added", all)
	}
}

func TestLineDelta(t *testing.T) {
	tests := []struct {
		a, b         string
		added, remov int
	}{
		{"", "x\n", 1, 0},
		{"a\nb\nc\n", "a\nc\n", 0, 1},
		{"a\nb\nc\n", "c\nb\na\n", 2, 2},
		{"a\nb", "a\nb\n", 1, 1},
		{"a\nb\nc\nd\n", "a\nx\nc\ny\n", 2, 2},
	}
	for _, tt := range tests {
		added, removed := lineDelta(splitLines([]byte(tt.a)), splitLines([]byte(tt.b)))
		if added != tt.added || removed != tt.remov {
			t.Errorf("lineDelta(%q, %q) = +%d -%d, want +%d -%d", tt.a, tt.b, added, removed, tt.added, tt.remov)
		}
	}
}

func FuzzDecodeManifest(f *testing.F) {
	sha := strings.Repeat("ab", 32)
	m := &Manifest{Trees: map[string][]Entry{
		"workspace": {
			{Path: "a/b.txt", Mode: 0o644, Size: 3, SHA: sha, Pack: sha, Off: 10},
			{Path: "a/l", Mode: fs.ModeSymlink, Link: "b.txt"},
			{Path: "e", Mode: fs.ModeDir | 0o755},
		},
	}}
	gz, err := encodeManifest(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(gz)
	f.Add([]byte(`{"trees":{"w":[{"path":"../x","mode":420,"size":1}]}}`))
	f.Add([]byte(`{"trees":{"w":[{"path":"l","mode":134217728,"link":"../../etc"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := decodeManifest(data)
		if err != nil {
			return
		}
		for _, entries := range m.Trees {
			for _, e := range entries {
				if !validRel(e.Path) || strings.Contains("/"+e.Path+"/", "/../") {
					t.Fatalf("accepted path %q", e.Path)
				}
				if e.IsLink() {
					resolved := filepath.Join("/root", filepath.Dir(e.Path), e.Link)
					if resolved != "/root" && !strings.HasPrefix(resolved, "/root/") {
						t.Fatalf("accepted link %q -> %q", e.Path, e.Link)
					}
				}
				if e.Size < 0 || e.Off < 0 {
					t.Fatalf("accepted size %d off %d", e.Size, e.Off)
				}
			}
		}
	})
}
