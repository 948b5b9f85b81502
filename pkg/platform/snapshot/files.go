package snapshot

import (
	"bufio"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"sort"
	"strings"
)

// Files calls fn with every regular file of m's tree and a reader of its
// content, reading each pack once: files come in pack and offset order,
// not path order. A content that does not match its entry's sha256 fails
// its reader at the end, and Files with it; what fn leaves unread is read
// and checked all the same.
func (s *Snapshots) Files(ctx context.Context, m *Manifest, tree string, fn func(e Entry, r io.Reader) error) error {
	return s.FilesOf(ctx, m, tree, nil, fn)
}

// FilesOf is Files for the regular files keep reports true for (every one
// when keep is nil): only the packs that hold them are read.
func (s *Snapshots) FilesOf(ctx context.Context, m *Manifest, tree string, keep func(Entry) bool, fn func(e Entry, r io.Reader) error) error {
	if err := validTenant(s.Tenant); err != nil {
		return err
	}
	byPack := map[string][]Entry{}
	var packs []string
	for _, e := range m.Trees[tree] {
		if !e.IsFile() || keep != nil && !keep(e) {
			continue
		}
		if err := validateEntry(e); err != nil {
			return fmt.Errorf("files %s/%s: %w", tree, e.Path, err)
		}
		if e.Size == 0 {
			if err := fn(e, strings.NewReader("")); err != nil {
				return err
			}
			continue
		}
		if byPack[e.Pack] == nil {
			packs = append(packs, e.Pack)
		}
		byPack[e.Pack] = append(byPack[e.Pack], e)
	}
	for _, pack := range packs {
		if err := s.packFiles(ctx, m, tree, pack, byPack[pack], fn); err != nil {
			return err
		}
	}
	return nil
}

// packFiles serves the entries of one pack from a single read of it.
func (s *Snapshots) packFiles(ctx context.Context, m *Manifest, tree, pack string, entries []Entry, fn func(Entry, io.Reader) error) error {
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Off < entries[j].Off })
	rc, err := s.Store.Get(ctx, packName(s.Tenant, pack))
	if err != nil {
		return fmt.Errorf("files %s: pack %s: %w", tree, pack, err)
	}
	defer rc.Close()
	br := bufio.NewReaderSize(rc, 256<<10)
	var pos int64
	for _, e := range entries {
		if e.Off < pos {
			// A range already read (files of the same content share
			// one): open it on its own.
			if err := s.openFile(ctx, m, tree, e, fn); err != nil {
				return err
			}
			continue
		}
		if _, err := io.CopyN(io.Discard, br, e.Off-pos); err != nil {
			return fmt.Errorf("files %s: pack %s: %w", tree, pack, err)
		}
		v := &verified{r: io.LimitReader(br, e.Size), h: sha256.New(), e: e}
		if err := fn(e, v); err != nil {
			return err
		}
		if _, err := io.Copy(io.Discard, v); err != nil {
			return fmt.Errorf("files %s: %w", tree, err)
		}
		pos = e.Off + e.Size
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (s *Snapshots) openFile(ctx context.Context, m *Manifest, tree string, e Entry, fn func(Entry, io.Reader) error) error {
	rc, _, err := s.Open(ctx, m, tree, e.Path)
	if err != nil {
		return err
	}
	defer rc.Close()
	if err := fn(e, rc); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, rc); err != nil {
		return fmt.Errorf("files %s: %w", tree, err)
	}
	return nil
}
