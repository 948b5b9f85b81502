package source

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile is the seed corpus: archives that try each escape.
func hostile() [][]entry {
	return [][]entry{
		{file("ok/a.txt", "hello"), {name: "ok/l", link: "a.txt", typ: tar.TypeSymlink}},
		{file("../sentinel/evil", "x")},
		{file("/abs/evil", "x")},
		{{name: "up", link: "..", typ: tar.TypeSymlink}, file("up/sentinel/evil", "x")},
		{{name: "self", link: ".", typ: tar.TypeSymlink}, {name: "esc", link: "self/../sentinel", typ: tar.TypeSymlink}, file("esc/evil", "x")},
		{{name: "abs", link: "/", typ: tar.TypeSymlink}, file("abs/tmp/evil", "x")},
		{{name: "h", link: "../sentinel/keep", typ: tar.TypeLink}},
		{file("d/f", "1"), {name: "d", link: "..", typ: tar.TypeSymlink}, file("d/evil", "x")},
		{{name: "p", typ: tar.TypeFifo}},
	}
}

// fuzzExtract extracts b next to a sentinel directory and fails if any
// file appears outside dir or inside it pointing out.
func fuzzExtract(t *testing.T, b []byte, format Format) {
	parent := t.TempDir()
	sentinel := filepath.Join(parent, "sentinel")
	os.Mkdir(sentinel, 0o755)
	os.WriteFile(filepath.Join(sentinel, "keep"), []byte("keep"), 0o644)
	dir := filepath.Join(parent, "out")
	lim := Limits{MaxBytes: 4 << 20, MaxFiles: 200, MaxFileBytes: 1 << 20}
	_, err := Extract(context.Background(), bytes.NewReader(b), int64(len(b)), format, dir, lim)

	left, _ := os.ReadDir(sentinel)
	if len(left) != 1 || left[0].Name() != "keep" {
		t.Fatalf("sentinel dir changed: %v", left)
	}
	if k, _ := os.ReadFile(filepath.Join(sentinel, "keep")); string(k) != "keep" {
		t.Fatalf("sentinel file changed: %q", k)
	}
	siblings, _ := os.ReadDir(parent)
	for _, s := range siblings {
		if s.Name() != "sentinel" && s.Name() != "out" {
			t.Fatalf("Extract wrote %s beside dir", s.Name())
		}
	}
	if err != nil {
		if _, serr := os.Lstat(dir); serr == nil {
			t.Fatalf("Extract failed (%v) but left %s", err, dir)
		}
		return
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			if r, err := filepath.EvalSymlinks(p); err == nil && r != realDir && !strings.HasPrefix(r, realDir+string(filepath.Separator)) {
				t.Fatalf("symlink %s resolves outside to %s", p, r)
			}
		}
		if d.Type()&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeSocket) != 0 {
			t.Fatalf("special file %s written", p)
		}
		return nil
	})
}

func FuzzExtractTar(f *testing.F) {
	for _, es := range hostile() {
		f.Add(tarOf(f, false, es...), false)
		f.Add(tarOf(f, true, es...), true)
	}
	f.Fuzz(func(t *testing.T, b []byte, gz bool) {
		format := FormatTar
		if gz {
			format = FormatTarGz
		}
		fuzzExtract(t, b, format)
	})
}

func FuzzExtractZip(f *testing.F) {
	for _, es := range hostile() {
		var zes []entry
		for _, e := range es {
			if e.typ != tar.TypeLink {
				zes = append(zes, e)
			}
		}
		f.Add(zipOf(f, zes...))
	}
	f.Fuzz(func(t *testing.T, b []byte) { fuzzExtract(t, b, FormatZip) })
}
