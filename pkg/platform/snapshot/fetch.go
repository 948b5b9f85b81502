package snapshot

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"sort"
)

// fetchPack streams one pack and writes the targets' ranges, in offset
// order; targets sharing a range are written from one read.
func (s *Snapshots) fetchPack(ctx context.Context, pack string, ts []target, st *Stats) error {
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].e.Off < ts[j].e.Off })
	rc, err := s.Store.Get(ctx, packName(s.Tenant, pack))
	if err != nil {
		return err
	}
	defer rc.Close()
	st.Packs++
	br := bufio.NewReaderSize(rc, 256<<10)
	var pos int64
	for i := 0; i < len(ts); {
		j := i + 1
		for j < len(ts) && ts[j].e.Off == ts[i].e.Off && ts[j].e.SHA == ts[i].e.SHA {
			j++
		}
		e := ts[i].e
		if e.Off < pos {
			return fmt.Errorf("pack %s: ranges overlap at %s", pack, e.Path)
		}
		skipped, err := io.CopyN(io.Discard, br, e.Off-pos)
		st.Downloaded += skipped
		if err != nil {
			return fmt.Errorf("pack %s: %w", pack, err)
		}
		// The first target reads the range; the rest copy what it wrote.
		if err := ts[i].r.write(e, &countReader{r: io.LimitReader(br, e.Size), n: &st.Downloaded}); err != nil {
			return err
		}
		for _, t := range ts[i+1 : j] {
			f, err := ts[i].r.root.Open(e.Path)
			if err != nil {
				return err
			}
			err = t.r.write(t.e, f)
			f.Close()
			if err != nil {
				return err
			}
		}
		pos = e.Off + e.Size
		i = j
	}
	return ctx.Err()
}

type countReader struct {
	r io.Reader
	n *int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}
