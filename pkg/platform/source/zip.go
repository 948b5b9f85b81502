package source

import (
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// maxLinkTarget bounds a symlink's target read from a zip entry.
const maxLinkTarget = 4096

func (t *tree) unzip(in io.Reader, size int64) error {
	spool, n, err := t.spool(in)
	if err != nil {
		return err
	}
	defer func() {
		spool.Close()
		os.Remove(spool.Name())
	}()
	if size >= 0 && n != size {
		return &ArchiveError{Reason: ReasonCorrupt, Err: fmt.Errorf("read %d bytes, want %d", n, size)}
	}
	zr, err := zip.NewReader(spool, n)
	if err != nil && !errors.Is(err, zip.ErrInsecurePath) {
		return readErr("", err)
	}
	if len(zr.File) > t.lim.MaxFiles {
		return refuse("", ReasonTooManyFiles)
	}
	g := &ratio{in: func() int64 { return n }, max: t.lim.MaxRatio}
	for _, f := range zr.File {
		if err := t.zipEntry(f, g); err != nil {
			return err
		}
	}
	return nil
}

// spool copies a zip to a temporary file, which random access needs,
// refusing one larger than the total limit allows.
func (t *tree) spool(in io.Reader) (*os.File, int64, error) {
	limit := t.lim.MaxBytes + t.lim.MaxBytes/8 + 1<<20
	f, err := os.CreateTemp("", "clopen-archive-*.zip")
	if err != nil {
		return nil, 0, fmt.Errorf("extract: %w", err)
	}
	n, err := io.Copy(f, io.LimitReader(in, limit))
	if err == nil && n == limit {
		if k, _ := in.Read(make([]byte, 1)); k > 0 {
			err = refuse("", ReasonTooLarge)
		}
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		var ae *ArchiveError
		if errors.As(err, &ae) {
			return nil, 0, err
		}
		return nil, 0, readErr("", err)
	}
	return f, n, nil
}

func (t *tree) zipEntry(f *zip.File, g *ratio) error {
	mode := f.Mode()
	switch {
	case mode&fs.ModeSymlink != 0:
		target, err := zipLinkTarget(f)
		if err != nil {
			return err
		}
		return t.symlink(f.Name, target)
	case mode.IsDir():
		return t.dir(f.Name)
	case mode&(fs.ModeDevice|fs.ModeCharDevice|fs.ModeNamedPipe|fs.ModeSocket) != 0:
		return refuse(f.Name, ReasonSpecial)
	case !mode.IsRegular():
		return refuse(f.Name, ReasonUnsupported)
	}
	if f.UncompressedSize64 > uint64(t.lim.MaxFileBytes) {
		return refuse(f.Name, ReasonFileTooLarge)
	}
	rc, err := f.Open()
	if err != nil {
		return readErr(f.Name, err)
	}
	defer rc.Close()
	return t.file(f.Name, mode&0o111 != 0, g.reader(rc))
}

func zipLinkTarget(f *zip.File) (string, error) {
	rc, err := f.Open()
	if err != nil {
		return "", readErr(f.Name, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, maxLinkTarget+1))
	if err != nil {
		return "", readErr(f.Name, err)
	}
	if len(b) > maxLinkTarget {
		return "", refuse(f.Name, ReasonLinkOutside)
	}
	return string(b), nil
}
