package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"time"
)

// defaultPackSize is the pack size when Snapshots.PackSize is 0.
const defaultPackSize = 8 << 20

// Tree is one directory captured into a snapshot under a name
// ("workspace", "state/claude-project", ...).
type Tree struct {
	Dir string
	// Match, when set, keeps only the files it accepts; rel is
	// slash-separated and relative to Dir. A tree with a Match is
	// restored additively: nothing is deleted.
	Match func(rel string) bool
	// Skip, when set, leaves out a file or a whole directory (caches).
	// Restore never deletes what Skip leaves out.
	Skip func(rel string, isDir bool) bool
}

// Stats says what a Capture or a Restore did.
type Stats struct {
	Files    int64 // regular files in the trees
	Bytes    int64 // their total size
	NewFiles int64 // files uploaded (Capture) or written (Restore)
	Uploaded int64 // bytes put to the store (Capture)
	// Downloaded is the bytes read from the store (Restore).
	Downloaded int64
	Packs      int   // packs put (Capture) or fetched (Restore)
	Skipped    int64 // devices, sockets, fifos and escaping symlinks left out
	Took       time.Duration
}

// Snapshots is a tenant's view of a Store: every object name it makes or
// reads is under "<tenant>/", so a tenant never reads another's snapshots.
// Its methods may be called concurrently for different trees.
type Snapshots struct {
	Store    Store
	Tenant   string
	Cache    *Cache // may be nil
	Memo     *Memo  // may be nil
	PackSize int64  // 0 means 8 MiB
}

// Capture walks every tree and stores a new manifest whose parent is prev
// (nil for the first). File contents found in prev, or met earlier in this
// capture, are not uploaded again; when nothing changed at all, Capture
// stores nothing and returns prev itself.
func (s *Snapshots) Capture(ctx context.Context, prev *Manifest, trees map[string]Tree) (*Manifest, Stats, error) {
	start := time.Now()
	var st Stats
	if err := validTenant(s.Tenant); err != nil {
		return nil, st, err
	}
	c := &capture{s: s, st: &st, known: map[string]Entry{}}
	if prev != nil {
		for _, entries := range prev.Trees {
			for _, e := range entries {
				if e.IsFile() && (e.Pack != "" || e.Size == 0) {
					c.known[e.SHA] = e
				}
			}
		}
	}
	defer c.close()
	m := &Manifest{Trees: map[string][]Entry{}, Created: time.Now().UTC()}
	if prev != nil {
		m.Parent = prev.ID
	}
	names := make([]string, 0, len(trees))
	for name := range trees {
		if !validRel(name) {
			return nil, st, fmt.Errorf("capture: invalid tree name %q", name)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		entries, err := c.walk(ctx, trees[name])
		if err != nil {
			return nil, st, fmt.Errorf("capture %s: %w", name, err)
		}
		m.Trees[name] = entries
		if trees[name].Match != nil {
			if m.Partial == nil {
				m.Partial = map[string]bool{}
			}
			m.Partial[name] = true
		}
	}
	if err := c.flush(ctx); err != nil {
		return nil, st, err
	}
	for _, entries := range m.Trees {
		for i := range entries {
			if p, ok := c.packOf[entries[i].SHA]; ok && entries[i].Pack == "" && entries[i].Size > 0 {
				entries[i].Pack = p
			}
		}
	}
	if err := m.validate(); err != nil {
		return nil, st, fmt.Errorf("capture: %w", err)
	}
	if unchanged(prev, m) {
		// Nothing to store: the previous snapshot is this one.
		st.Took = time.Since(start)
		return prev, st, s.Cache.Save()
	}
	n, err := s.putManifest(ctx, m)
	if err != nil {
		return nil, st, fmt.Errorf("capture: %w", err)
	}
	st.Uploaded += n
	if err := s.Cache.Save(); err != nil {
		return nil, st, err
	}
	s.Memo.put(s.Tenant, m)
	st.Took = time.Since(start)
	return m, st, nil
}

// putManifest stores m under its content address and sets m.ID; it
// returns the bytes stored.
func (s *Snapshots) putManifest(ctx context.Context, m *Manifest) (int64, error) {
	data, err := encodeManifest(m)
	if err != nil {
		return 0, err
	}
	m.ID = manifestID(data)
	return s.Store.Put(ctx, manifestName(s.Tenant, m.ID), bytes.NewReader(data))
}

// unchanged says m holds exactly what the stored manifest prev holds.
func unchanged(prev, m *Manifest) bool {
	if prev == nil || prev.ID == "" || len(prev.Trees) != len(m.Trees) || !maps.Equal(prev.Partial, m.Partial) {
		return false
	}
	for name, entries := range m.Trees {
		old, ok := prev.Trees[name]
		if !ok || !slices.Equal(old, entries) {
			return false
		}
	}
	return true
}

// capture is one Capture's state: the pack being filled and what is known.
type capture struct {
	s     *Snapshots
	st    *Stats
	known map[string]Entry // sha256 -> an entry holding that content

	pack    *os.File          // spool of the pack being filled, nil until needed
	packLen int64             // bytes in the spool
	pending []string          // sha256s written to the spool
	packOf  map[string]string // sha256 -> pack, for contents uploaded in this capture
}

func (c *capture) walk(ctx context.Context, t Tree) ([]Entry, error) {
	root, err := filepath.Abs(t.Dir)
	if err != nil {
		return nil, err
	}
	var entries []Entry
	var dirs []string
	nonEmpty := map[string]bool{}
	add := func(e Entry) {
		entries = append(entries, e)
		for d := path.Dir(e.Path); d != "." && !nonEmpty[d]; d = path.Dir(d) {
			nonEmpty[d] = true
		}
	}
	err = filepath.WalkDir(root, func(abs string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && abs != root {
			return nil // removed while we walked: not part of the snapshot
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if abs == root {
			return nil
		}
		rel, err := filepath.Rel(root, abs)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if t.Skip != nil && t.Skip(rel, d.IsDir()) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			dirs = append(dirs, rel)
			return nil
		}
		if t.Match != nil && !t.Match(rel) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case info.Mode().IsRegular():
			e, err := c.file(ctx, abs, rel, info)
			if errors.Is(err, fs.ErrNotExist) {
				c.st.Files--
				return nil
			}
			if err != nil {
				return err
			}
			add(e)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(abs)
			if err != nil {
				return err
			}
			if !linkInside(rel, link) {
				c.st.Skipped++
				return nil
			}
			add(Entry{Path: rel, Mode: fs.ModeSymlink, Link: link})
		default:
			c.st.Skipped++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Children were walked after their parents: going backwards settles
	// every child before its parent is judged empty.
	for i := len(dirs) - 1; i >= 0; i-- {
		if nonEmpty[dirs[i]] || t.Match != nil && !t.Match(dirs[i]) {
			continue
		}
		info, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dirs[i])))
		if err != nil {
			return nil, err
		}
		add(Entry{Path: dirs[i], Mode: fs.ModeDir | info.Mode().Perm()})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	return entries, nil
}

// file captures one regular file: from the cache and the known contents
// when it can, otherwise by copying it into the pack while hashing it, so
// the recorded sha256 is that of the bytes stored even if the file changes
// meanwhile.
func (c *capture) file(ctx context.Context, abs, rel string, info fs.FileInfo) (Entry, error) {
	e := Entry{Path: rel, Mode: info.Mode().Perm(), Size: info.Size()}
	c.st.Files++
	if sha, ok := c.s.Cache.lookup(abs, info); ok {
		if k, ok := c.reuse(sha); ok {
			e.SHA, e.Pack, e.Off = sha, k.Pack, k.Off
			c.st.Bytes += e.Size
			return e, nil
		}
	}
	f, err := os.Open(abs)
	if err != nil {
		return e, err
	}
	defer f.Close()
	if err := c.spool(); err != nil {
		return e, err
	}
	off := c.packLen
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(c.pack, h), f)
	if err != nil {
		return e, fmt.Errorf("%s: %w", rel, err)
	}
	e.Size, e.SHA = n, hexSum([sha256.Size]byte(h.Sum(nil)))
	c.st.Bytes += n
	if after, err := f.Stat(); err == nil && after.Size() == n && statKey(after).same(statKey(info)) {
		c.s.Cache.remember(abs, info, e.SHA)
	}
	if k, ok := c.reuse(e.SHA); ok {
		// Already stored: take the copy back out of the spool.
		if err := c.pack.Truncate(off); err != nil {
			return e, err
		}
		if _, err := c.pack.Seek(off, io.SeekStart); err != nil {
			return e, err
		}
		e.Pack, e.Off = k.Pack, k.Off
		return e, nil
	}
	e.Off = off
	c.packLen += n
	c.known[e.SHA] = e // Pack is filled in once the pack is named
	c.pending = append(c.pending, e.SHA)
	c.st.NewFiles++
	if c.packLen >= c.packSize() {
		return e, c.flush(ctx)
	}
	return e, nil
}

// reuse returns a stored (or spooled) entry with content sha.
func (c *capture) reuse(sha string) (Entry, bool) {
	k, ok := c.known[sha]
	if ok && k.Pack == "" && k.Size > 0 {
		// Spooled in an earlier pack of this capture, or the current one.
		k.Pack = c.packOf[sha]
	}
	return k, ok
}
