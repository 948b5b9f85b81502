package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
)

// tree writes the entries of one archive under root, checking each one
// against the rules and limits Extract documents.
type tree struct {
	root    *os.Root
	lim     Limits
	stats   Stats
	entries int
}

// errBomb is returned by a ratio reader once the output outgrows the
// input by more than the allowed ratio.
var errBomb = errors.New("decompression bomb")

// ratio guards a decompressor: it counts what is read out of it against
// what the archive has consumed so far.
type ratio struct {
	in  func() int64
	max float64
	out int64
}

func (g *ratio) reader(r io.Reader) io.Reader { return &ratioReader{g: g, r: r} }

type ratioReader struct {
	g *ratio
	r io.Reader
}

func (rr *ratioReader) Read(p []byte) (int, error) {
	n, err := rr.r.Read(p)
	g := rr.g
	if out := g.out + int64(n); out > ratioFloor && float64(out) > g.max*float64(max(g.in(), 1)) {
		return 0, errBomb
	}
	g.out += int64(n)
	return n, err
}

// readErr classifies an error met while reading the archive at entry.
func readErr(entry string, err error) error {
	switch {
	case errors.Is(err, errBomb):
		return refuse(entry, ReasonBomb)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("extract %q: %w", entry, err)
	}
	return &ArchiveError{Entry: entry, Reason: ReasonCorrupt, Err: err}
}

// cleanName turns an entry's name into a slash-separated path relative to
// the root, or says why it cannot be one. The root itself is "".
func cleanName(name string) (string, Reason) {
	if strings.IndexByte(name, 0) >= 0 {
		return "", ReasonNUL
	}
	if strings.HasPrefix(name, "/") {
		return "", ReasonAbsolute
	}
	var parts []string
	for p := range strings.SplitSeq(name, "/") {
		switch p {
		case "", ".":
			continue
		case "..":
			return "", ReasonDotDot
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "/"), ""
}

// linkInside says whether a symlink at rel with this target resolves
// inside the tree. The target may climb with leading .. components no
// higher than the root, then only descend: every directory on rel is a
// real one (entries are never written through symlinks), and every other
// symlink obeys the same rule, so no path through the tree leaves it.
func linkInside(rel, target string) bool {
	if target == "" || strings.HasPrefix(target, "/") || strings.IndexByte(target, 0) >= 0 {
		return false
	}
	up, named := 0, false
	for p := range strings.SplitSeq(target, "/") {
		switch p {
		case "", ".":
		case "..":
			if named {
				return false
			}
			up++
		default:
			named = true
		}
	}
	return up <= strings.Count(rel, "/")
}

// begin counts an entry and checks its name and parents, creating missing
// parent directories. It returns the entry's path relative to the root.
func (t *tree) begin(name string, isDir bool) (string, error) {
	t.entries++
	if t.entries > t.lim.MaxFiles {
		return "", refuse(name, ReasonTooManyFiles)
	}
	rel, why := cleanName(name)
	if why != "" {
		return "", refuse(name, why)
	}
	if rel == "" {
		if isDir {
			return "", nil
		}
		return "", refuse(name, ReasonDuplicate)
	}
	for i := 0; i < len(rel); i++ {
		if rel[i] != '/' {
			continue
		}
		fi, err := t.root.Lstat(rel[:i])
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := t.root.Mkdir(rel[:i], 0o755); err != nil {
				return "", &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
			}
			t.stats.Dirs++
		case err != nil:
			return "", &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
		case fi.Mode()&fs.ModeSymlink != 0:
			return "", refuse(name, ReasonViaSymlink)
		case !fi.IsDir():
			return "", refuse(name, ReasonNotDir)
		}
	}
	fi, err := t.root.Lstat(rel)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return rel, nil
	case err != nil:
		return "", &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
	case isDir && fi.IsDir():
		// A directory named again, or after its contents, is harmless.
		return "", nil
	}
	return "", refuse(name, ReasonDuplicate)
}

func (t *tree) dir(name string) error {
	rel, err := t.begin(name, true)
	if err != nil || rel == "" {
		return err
	}
	if err := t.root.Mkdir(rel, 0o755); err != nil {
		return &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
	}
	t.stats.Dirs++
	return nil
}

// file writes r to a new file; exec keeps the executable bits.
func (t *tree) file(name string, exec bool, r io.Reader) error {
	rel, err := t.begin(name, false)
	if err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if exec {
		perm = 0o755
	}
	f, err := t.root.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
	}
	err = t.copy(name, f, r)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = &ArchiveError{Entry: name, Reason: ReasonWrite, Err: cerr}
	}
	if err == nil {
		t.stats.Files++
	}
	return err
}

// copy moves a file's contents, checking each chunk against the limits
// before it is written, so nothing past a limit reaches the disk.
func (t *tree) copy(name string, w io.Writer, r io.Reader) error {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, rerr := r.Read(buf)
		if k > 0 {
			switch {
			case n+int64(k) > t.lim.MaxFileBytes:
				return refuse(name, ReasonFileTooLarge)
			case t.stats.Bytes+int64(k) > t.lim.MaxBytes:
				return refuse(name, ReasonTooLarge)
			}
			if _, err := w.Write(buf[:k]); err != nil {
				return &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
			}
			n += int64(k)
			t.stats.Bytes += int64(k)
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return readErr(name, rerr)
		}
	}
}

func (t *tree) symlink(name, target string) error {
	rel, err := t.begin(name, false)
	if err != nil {
		return err
	}
	if !linkInside(rel, target) {
		return refuse(name, ReasonLinkOutside)
	}
	if err := t.root.Symlink(target, rel); err != nil {
		return &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
	}
	t.stats.Symlinks++
	return nil
}

// link makes a hard link to a regular file written earlier; target is
// named from the archive's root.
func (t *tree) link(name, target string) error {
	old, why := cleanName(target)
	if why != "" || old == "" {
		return refuse(name, ReasonLinkOutside)
	}
	fi, err := t.root.Lstat(old)
	if err != nil || !fi.Mode().IsRegular() {
		return refuse(name, ReasonLinkTarget)
	}
	rel, err := t.begin(name, false)
	if err != nil {
		return err
	}
	if err := t.root.Link(old, rel); err != nil {
		return &ArchiveError{Entry: name, Reason: ReasonWrite, Err: err}
	}
	t.stats.Links++
	return nil
}
