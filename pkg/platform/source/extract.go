package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Extract unpacks an archive of the given format read from r into dir and
// reports what it wrote. size is the length of r in bytes, or -1 when it is
// not known; a zip, which must be read at random, is first spooled to a
// temporary file of at most the size limit.
//
// dir must not exist (Extract creates it; its parent must exist) or be an
// empty directory. Paths are kept as the archive names them: a single
// top-level directory is not stripped. Files get mode 0644, or 0755 when
// the archive marks them executable; setuid, setgid and sticky bits are
// dropped, and directories get 0755.
//
// Extract refuses the whole archive, with an *ArchiveError naming the
// entry and the Reason, on the first entry that is absolute, has a ..
// component or a NUL, would be written through a symlink or over an
// earlier entry, is a device, fifo or socket, or is a link that points out
// of the tree; and as soon as a limit would be crossed, before writing
// past it. On any error what was written is removed, and dir too if
// Extract created it.
func Extract(ctx context.Context, r io.Reader, size int64, format Format, dir string, lim Limits) (Stats, error) {
	lim = lim.withDefaults()
	created, err := prepareDir(dir)
	if err != nil {
		return Stats{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return Stats{}, fmt.Errorf("extract: %w", err)
	}
	t := &tree{root: root, lim: lim}
	in := &countingReader{ctx: ctx, r: r}
	if size >= 0 {
		in.r = io.LimitReader(r, size)
	}
	switch format {
	case FormatTar:
		err = t.untar(in)
	case FormatTarGz:
		err = t.untarGz(in)
	case FormatZip:
		err = t.unzip(in, size)
	default:
		err = fmt.Errorf("extract: %w: %q", ErrUnknownFormat, format)
	}
	root.Close()
	if err != nil {
		if rerr := cleanDir(dir, created); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove partial extraction: %w", rerr))
		}
		return Stats{}, err
	}
	return t.stats, nil
}

// prepareDir makes dir, or checks that it is an empty directory, and says
// whether it made it.
func prepareDir(dir string) (created bool, err error) {
	err = os.Mkdir(dir, 0o755)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("extract: %w", err)
	}
	f, err := os.Open(dir)
	if err != nil {
		return false, fmt.Errorf("extract: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		return false, fmt.Errorf("extract: %s is not a directory", dir)
	}
	if names, _ := f.Readdirnames(1); len(names) > 0 {
		return false, fmt.Errorf("extract: %s is not empty", dir)
	}
	return false, nil
}

// cleanDir removes what an extraction wrote into dir, and dir itself when
// the extraction created it.
func cleanDir(dir string, created bool) error {
	if created {
		return os.RemoveAll(dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, os.RemoveAll(dir+string(os.PathSeparator)+e.Name()))
	}
	return errors.Join(errs...)
}

// countingReader counts the bytes read from an archive, for the ratio
// guard, and stops reading once ctx is done.
type countingReader struct {
	ctx context.Context
	r   io.Reader
	n   int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
