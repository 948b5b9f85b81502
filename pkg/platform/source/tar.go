package source

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"io"
)

func (t *tree) untarGz(in *countingReader) error {
	zr, err := gzip.NewReader(in)
	if err != nil {
		return readErr("", err)
	}
	defer zr.Close()
	g := &ratio{in: func() int64 { return in.n }, max: t.lim.MaxRatio}
	return t.untar(g.reader(zr))
}

func (t *tree) untar(r io.Reader) error {
	tr := tar.NewReader(r)
	name := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return readErr(name, err)
		}
		name = h.Name
		if err := t.tarEntry(h, tr); err != nil {
			return err
		}
	}
}

func (t *tree) tarEntry(h *tar.Header, r io.Reader) error {
	if h.Typeflag != tar.TypeReg && h.Size > 0 {
		// archive/tar would skip the data of an entry it does not return
		// as a file; refusing keeps every byte read accounted for.
		switch h.Typeflag {
		case tar.TypeXHeader, tar.TypeXGlobalHeader, tar.TypeGNULongName, tar.TypeGNULongLink:
		default:
			return &ArchiveError{Entry: h.Name, Reason: ReasonCorrupt, Err: errors.New("non-file entry carries data")}
		}
	}
	switch h.Typeflag {
	case tar.TypeReg:
		return t.file(h.Name, h.Mode&0o111 != 0, r)
	case tar.TypeDir:
		return t.dir(h.Name)
	case tar.TypeSymlink:
		return t.symlink(h.Name, h.Linkname)
	case tar.TypeLink:
		return t.link(h.Name, h.Linkname)
	case tar.TypeChar, tar.TypeBlock, tar.TypeFifo:
		return refuse(h.Name, ReasonSpecial)
	case tar.TypeXGlobalHeader:
		return nil
	}
	return refuse(h.Name, ReasonUnsupported)
}
