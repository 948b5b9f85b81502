package snapshot

import (
	"context"
	"crypto/sha256"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Open streams the content of one regular file of m's tree. The reader
// fails at its end if the content does not match the entry's sha256; the
// caller closes it. A missing path is ErrNotFound.
func (s *Snapshots) Open(ctx context.Context, m *Manifest, tree, path string) (io.ReadCloser, Entry, error) {
	if err := validTenant(s.Tenant); err != nil {
		return nil, Entry{}, err
	}
	e, ok := m.Find(tree, path)
	if !ok {
		return nil, e, fmt.Errorf("open %s/%s: %w", tree, path, ErrNotFound)
	}
	if !e.IsFile() {
		return nil, e, fmt.Errorf("open %s/%s: not a regular file", tree, path)
	}
	if err := validateEntry(e); err != nil {
		return nil, e, fmt.Errorf("open %s/%s: %w", tree, path, err)
	}
	if e.Size == 0 {
		return io.NopCloser(strings.NewReader("")), e, nil
	}
	rc, err := s.Store.Get(ctx, packName(s.Tenant, e.Pack))
	if err != nil {
		return nil, e, fmt.Errorf("open %s/%s: %w", tree, path, err)
	}
	if _, err := io.CopyN(io.Discard, rc, e.Off); err != nil {
		rc.Close()
		return nil, e, fmt.Errorf("open %s/%s: %w", tree, path, err)
	}
	return &verified{rc: rc, r: io.LimitReader(rc, e.Size), h: sha256.New(), e: e}, e, nil
}

// verified checks an entry's sha256 as it is read.
type verified struct {
	rc io.ReadCloser
	r  io.Reader
	h  hash.Hash
	n  int64
	e  Entry
}

func (v *verified) Read(p []byte) (int, error) {
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if err == io.EOF && (v.n != v.e.Size || hexSum([sha256.Size]byte(v.h.Sum(nil))) != v.e.SHA) {
		return n, fmt.Errorf("%s: content does not match its sha256", v.e.Path)
	}
	return n, err
}

func (v *verified) Close() error { return v.rc.Close() }
