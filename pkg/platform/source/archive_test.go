package source

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// entry describes one member of a test archive.
type entry struct {
	name, body, link string
	typ              byte // a tar type flag
	mode             int64
}

func tarOf(t testing.TB, gz bool, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.Writer = &buf
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = zw
	}
	tw := tar.NewWriter(w)
	for _, e := range entries {
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: mode, Linkname: e.link, Size: int64(len(e.body)), Format: tar.FormatPAX}
		if e.typ != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatalf("tar header %q: %v", e.name, err)
		}
		if h.Size > 0 {
			io.WriteString(tw, e.body)
		}
	}
	tw.Close()
	if zw != nil {
		zw.Close()
	}
	return buf.Bytes()
}

func zipOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		mode := fs.FileMode(e.mode)
		if mode == 0 {
			mode = 0o644
		}
		body := e.body
		switch e.typ {
		case tar.TypeDir:
			mode |= fs.ModeDir
		case tar.TypeSymlink:
			mode |= fs.ModeSymlink
			body = e.link
		case tar.TypeFifo:
			mode |= fs.ModeNamedPipe
		case tar.TypeChar:
			mode |= fs.ModeDevice | fs.ModeCharDevice
		}
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatalf("zip header %q: %v", e.name, err)
		}
		io.WriteString(w, body)
	}
	zw.Close()
	return buf.Bytes()
}

func extractBytes(t testing.TB, b []byte, f Format, dir string, lim Limits) (Stats, error) {
	t.Helper()
	return Extract(context.Background(), bytes.NewReader(b), int64(len(b)), f, dir, lim)
}

func file(name, body string) entry { return entry{name: name, body: body, typ: tar.TypeReg} }

func TestExtractRoundTrip(t *testing.T) {
	entries := []entry{
		{name: "proj/", typ: tar.TypeDir, mode: 0o755},
		{name: "proj/bin/run.sh", body: "#!/bin/sh\necho hi\n", typ: tar.TypeReg, mode: 0o4755},
		file("proj/src/deep/nested/main.go", "package main\n"),
		{name: "proj/link", link: "src/deep/nested/main.go", typ: tar.TypeSymlink},
		{name: "proj/src/deep/up", link: "../../bin/run.sh", typ: tar.TypeSymlink},
	}
	archives := map[Format][]byte{
		FormatTar:   tarOf(t, false, entries...),
		FormatTarGz: tarOf(t, true, entries...),
		FormatZip:   zipOf(t, entries...),
	}
	for format, b := range archives {
		t.Run(string(format), func(t *testing.T) {
			got, err := DetectFormat(b, "upload")
			if err != nil || got != format {
				t.Fatalf("DetectFormat = %q, %v, want %q", got, err, format)
			}
			dir := filepath.Join(t.TempDir(), "out")
			st, err := extractBytes(t, b, format, dir, Limits{})
			if err != nil {
				t.Fatalf("Extract: %v", err)
			}
			if st.Files != 2 || st.Symlinks != 2 {
				t.Errorf("Stats = %+v, want 2 files and 2 symlinks", st)
			}
			fi, err := os.Stat(filepath.Join(dir, "proj/bin/run.sh"))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o755 {
				t.Errorf("run.sh mode = %v, want -rwxr-xr-x (exec kept, setuid dropped)", fi.Mode())
			}
			for link, want := range map[string]string{"proj/link": "package main\n", "proj/src/deep/up": "#!/bin/sh\necho hi\n"} {
				b, err := os.ReadFile(filepath.Join(dir, link))
				if err != nil || string(b) != want {
					t.Errorf("read through %s = %q, %v, want %q", link, b, err, want)
				}
			}
			if fi, _ := os.Stat(filepath.Join(dir, "proj/src/deep/nested/main.go")); fi == nil || fi.Mode() != 0o644 {
				t.Errorf("main.go stat = %v, want -rw-r--r--", fi)
			}
		})
	}
}

func TestExtractRefusesHostileEntries(t *testing.T) {
	tests := []struct {
		name string
		give []entry
		want Reason
	}{
		{"dotdot", []entry{file("a/../../evil", "x")}, ReasonDotDot},
		{"absolute", []entry{file("/tmp/evil", "x")}, ReasonAbsolute},
		{"nul", []entry{file("a\x00b", "x")}, ReasonNUL},
		{"symlink out absolute", []entry{{name: "l", link: "/etc", typ: tar.TypeSymlink}}, ReasonLinkOutside},
		{"symlink out relative", []entry{{name: "a/l", link: "../../x", typ: tar.TypeSymlink}}, ReasonLinkOutside},
		{"symlink dotdot after name", []entry{
			{name: "self", link: ".", typ: tar.TypeSymlink},
			{name: "l", link: "self/../x", typ: tar.TypeSymlink},
		}, ReasonLinkOutside},
		{"write through symlink", []entry{
			{name: "d", link: ".", typ: tar.TypeSymlink},
			file("d/f", "x"),
		}, ReasonViaSymlink},
		{"hardlink out", []entry{{name: "h", link: "../../etc/passwd", typ: tar.TypeLink}}, ReasonLinkOutside},
		{"hardlink to missing", []entry{{name: "h", link: "nope", typ: tar.TypeLink}}, ReasonLinkTarget},
		{"fifo", []entry{{name: "p", typ: tar.TypeFifo}}, ReasonSpecial},
		{"char device", []entry{{name: "c", typ: tar.TypeChar}}, ReasonSpecial},
		{"duplicate file", []entry{file("f", "1"), file("f", "2")}, ReasonDuplicate},
		{"file replaces dir", []entry{file("d/f", "1"), file("d", "2")}, ReasonDuplicate},
		{"symlink replaces dir", []entry{file("d/f", "1"), {name: "d", link: ".", typ: tar.TypeSymlink}}, ReasonDuplicate},
		{"file under file", []entry{file("f", "1"), file("f/g", "2")}, ReasonNotDir},
	}
	for _, tt := range tests {
		for _, format := range []Format{FormatTar, FormatZip} {
			if format == FormatZip && tt.give[0].typ == tar.TypeLink || format == FormatTar && tt.name == "nul" {
				continue // zip has no hard links; tar cannot encode a NUL
			}
			t.Run(tt.name+"/"+string(format), func(t *testing.T) {
				var b []byte
				if format == FormatZip {
					b = zipOf(t, tt.give...)
				} else {
					b = tarOf(t, false, tt.give...)
				}
				parent := t.TempDir()
				dir := filepath.Join(parent, "out")
				_, err := extractBytes(t, b, format, dir, Limits{})
				var ae *ArchiveError
				if !errors.As(err, &ae) || ae.Reason != tt.want {
					t.Fatalf("Extract error = %v, want reason %q", err, tt.want)
				}
				if ae.Entry != tt.give[len(tt.give)-1].name {
					t.Errorf("error names entry %q, want %q", ae.Entry, tt.give[len(tt.give)-1].name)
				}
				if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("partial extraction left behind: %v", err)
				}
				if left, _ := os.ReadDir(parent); len(left) != 0 {
					t.Errorf("parent holds %d entries, want none", len(left))
				}
			})
		}
	}
}

func TestExtractDirMustBeFreshOrEmpty(t *testing.T) {
	b := tarOf(t, false, file("a", "1"))
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if _, err := extractBytes(t, b, FormatTar, dir, Limits{}); err == nil {
		t.Fatal("Extract into a non-empty dir succeeded")
	}
	empty := t.TempDir()
	if _, err := extractBytes(t, b, FormatTar, empty, Limits{}); err != nil {
		t.Fatalf("Extract into an empty dir: %v", err)
	}
	bad := tarOf(t, false, file("a", "1"), file("../b", "2"))
	empty2 := t.TempDir()
	if _, err := extractBytes(t, bad, FormatTar, empty2, Limits{}); err == nil {
		t.Fatal("hostile archive accepted")
	}
	if left, _ := os.ReadDir(empty2); len(left) != 0 {
		t.Errorf("an existing dir holds %d entries after a refusal, want none", len(left))
	}
}

func TestExtractLimits(t *testing.T) {
	big := string(bytes.Repeat([]byte("abcdefgh"), 1<<12)) // 32 KiB
	tests := []struct {
		name string
		lim  Limits
		give []entry
		want Reason
	}{
		{"file bytes", Limits{MaxFileBytes: 1000}, []entry{file("f", big)}, ReasonFileTooLarge},
		{"total bytes", Limits{MaxBytes: 40_000}, []entry{file("a", big), file("b", big)}, ReasonTooLarge},
		{"files", Limits{MaxFiles: 2}, []entry{file("a", "1"), file("b", "2"), file("c", "3")}, ReasonTooManyFiles},
	}
	for _, tt := range tests {
		for _, format := range []Format{FormatTar, FormatTarGz, FormatZip} {
			t.Run(tt.name+"/"+string(format), func(t *testing.T) {
				var b []byte
				switch format {
				case FormatZip:
					b = zipOf(t, tt.give...)
				default:
					b = tarOf(t, format == FormatTarGz, tt.give...)
				}
				dir := filepath.Join(t.TempDir(), "out")
				_, err := extractBytes(t, b, format, dir, tt.lim)
				var ae *ArchiveError
				if !errors.As(err, &ae) || ae.Reason != tt.want {
					t.Fatalf("Extract error = %v, want reason %q", err, tt.want)
				}
			})
		}
	}
}

// zeros streams a tar.gz holding one file of n zero bytes, generated as it
// is read and never held whole.
func zeros(t *testing.T, n int64) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		zw, _ := gzip.NewWriterLevel(pw, gzip.BestSpeed)
		tw := tar.NewWriter(zw)
		err := tw.WriteHeader(&tar.Header{Name: "zeros", Typeflag: tar.TypeReg, Mode: 0o644, Size: n})
		chunk := make([]byte, 1<<20)
		for left := n; err == nil && left > 0; left -= int64(len(chunk)) {
			_, err = tw.Write(chunk[:min(left, int64(len(chunk)))])
		}
		if err == nil {
			err = tw.Close()
		}
		if err == nil {
			err = zw.Close()
		}
		pw.CloseWithError(err)
	}()
	t.Cleanup(func() { pr.Close() })
	return pr
}

func TestExtractRefusesBombQuickly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	start := time.Now()
	_, err := Extract(context.Background(), zeros(t, 10<<30), -1, FormatTarGz, dir, Limits{})
	var ae *ArchiveError
	if !errors.As(err, &ae) || ae.Reason != ReasonBomb || ae.Entry != "zeros" {
		t.Fatalf("Extract error = %v, want reason %q at entry zeros", err, ReasonBomb)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusing the bomb took %v", d)
	}
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("partial extraction left behind: %v", err)
	}
}

func TestExtractBombWithinRatioStopsAtMaxBytes(t *testing.T) {
	// A generous ratio lets the zeros through; the total limit must still
	// stop them without writing more than MaxBytes.
	parent := t.TempDir()
	dir := filepath.Join(parent, "out")
	lim := Limits{MaxBytes: 8 << 20, MaxRatio: 1e9}
	_, err := Extract(context.Background(), zeros(t, 10<<30), -1, FormatTarGz, dir, lim)
	var ae *ArchiveError
	if !errors.As(err, &ae) || ae.Reason != ReasonTooLarge {
		t.Fatalf("Extract error = %v, want reason %q", err, ReasonTooLarge)
	}
}

func TestDetectFormat(t *testing.T) {
	tests := []struct {
		name string
		give []byte
		want Format
	}{
		{"x.tar", tarOf(t, false, file("a", "1")), FormatTar},
		{"x.tgz", tarOf(t, true, file("a", "1")), FormatTarGz},
		{"x.zip", zipOf(t, file("a", "1")), FormatZip},
		{"x.tar.bz2", []byte("BZh91AY&SY"), ""},
		{"x.txt", []byte("hello world"), ""},
	}
	for _, tt := range tests {
		got, err := DetectFormat(tt.give, tt.name)
		if got != tt.want || (tt.want == "") != errors.Is(err, ErrUnknownFormat) {
			t.Errorf("DetectFormat(%s) = %q, %v, want %q", tt.name, got, err, tt.want)
		}
	}
}

func TestExtractRefusesZipBomb(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("zeros")
	chunk := make([]byte, 1<<20)
	for range 64 {
		w.Write(chunk)
	}
	zw.Close()
	dir := filepath.Join(t.TempDir(), "out")
	_, err := extractBytes(t, buf.Bytes(), FormatZip, dir, Limits{})
	var ae *ArchiveError
	if !errors.As(err, &ae) || ae.Reason != ReasonBomb || ae.Entry != "zeros" {
		t.Fatalf("Extract error = %v, want reason %q at entry zeros", err, ReasonBomb)
	}
}
