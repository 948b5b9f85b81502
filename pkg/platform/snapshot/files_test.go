package snapshot

import (
	"context"
	"io"
	"testing"
)

func TestFilesReadsEveryFileOnce(t *testing.T) {
	ctx := context.Background()
	s := &Snapshots{Store: newStore(t), Tenant: "acme", PackSize: 16}
	src := t.TempDir()
	want := map[string]string{"a.txt": "same content\n", "b/b.txt": "same content\n", "c.txt": "other\n", "d.txt": "", "e.bin": "\x00\x01\x02"}
	for p, c := range want {
		write(t, src, p, c, 0o644)
	}
	m, _, err := s.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	err = s.Files(ctx, m, "workspace", func(e Entry, r io.Reader) error {
		if e.Path == "c.txt" {
			return nil // left unread: Files reads past it
		}
		b, err := io.ReadAll(r)
		got[e.Path] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	delete(want, "c.txt")
	if len(got) != len(want) {
		t.Errorf("Files gave %q, want %q", got, want)
	}
	for p, c := range want {
		if got[p] != c {
			t.Errorf("%s = %q, want %q", p, got[p], c)
		}
	}
}
