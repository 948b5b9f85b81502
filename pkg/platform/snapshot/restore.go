package snapshot

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"
)

// Restore makes each target directory equal to the manifest's tree of the
// same name (dirs maps tree names to directories). It writes missing and
// different files, creates symlinks and empty directories, sets modes, and
// deletes what the tree does not have unless the tree was captured with a
// Match. Each pack it needs is fetched once. A manifest that is not valid
// is refused before anything is written.
func (s *Snapshots) Restore(ctx context.Context, m *Manifest, dirs map[string]string) (Stats, error) {
	trees := make(map[string]Tree, len(dirs))
	for name, dir := range dirs {
		trees[name] = Tree{Dir: dir}
	}
	return s.RestoreTrees(ctx, m, trees)
}

// RestoreTrees is Restore with the trees as captured: what a tree's Skip
// leaves out or its Match rejects is never deleted.
func (s *Snapshots) RestoreTrees(ctx context.Context, m *Manifest, trees map[string]Tree) (Stats, error) {
	start := time.Now()
	var st Stats
	if err := validTenant(s.Tenant); err != nil {
		return st, err
	}
	if err := m.validate(); err != nil {
		return st, fmt.Errorf("restore: %w", err)
	}
	for name := range trees {
		if _, ok := m.Trees[name]; !ok {
			return st, fmt.Errorf("restore %s: %w", name, ErrNotFound)
		}
	}
	fetch := map[string][]target{} // pack -> files to write from it
	var roots []*os.Root
	defer func() {
		for _, r := range roots {
			r.Close()
		}
	}()
	for name, t := range trees {
		// The cache is keyed by absolute paths, as Capture sees them.
		abs, err := filepath.Abs(t.Dir)
		if err != nil {
			return st, fmt.Errorf("restore %s: %w", name, err)
		}
		t.Dir = abs
		if err := os.MkdirAll(t.Dir, 0o755); err != nil {
			return st, fmt.Errorf("restore %s: %w", name, err)
		}
		root, err := os.OpenRoot(t.Dir)
		if err != nil {
			return st, fmt.Errorf("restore %s: %w", name, err)
		}
		roots = append(roots, root)
		r := &restorer{s: s, root: root, tree: t, partial: m.Partial[name] || t.Match != nil, st: &st}
		if err := r.plan(m.Trees[name], fetch); err != nil {
			return st, fmt.Errorf("restore %s: %w", name, err)
		}
	}
	packs := make([]string, 0, len(fetch))
	for p := range fetch {
		packs = append(packs, p)
	}
	sort.Strings(packs)
	for _, p := range packs {
		if err := s.fetchPack(ctx, p, fetch[p], &st); err != nil {
			return st, fmt.Errorf("restore: %w", err)
		}
	}
	if err := s.Cache.Save(); err != nil {
		return st, err
	}
	st.Took = time.Since(start)
	return st, nil
}

// target is one file to write from a pack.
type target struct {
	r *restorer
	e Entry
}

type restorer struct {
	s       *Snapshots
	root    *os.Root
	tree    Tree
	partial bool
	st      *Stats
	madeDir map[string]bool
}

// plan deletes what does not belong, makes directories and symlinks,
// fixes modes, and adds the files whose content must be fetched.
func (r *restorer) plan(entries []Entry, fetch map[string][]target) error {
	want := make(map[string]Entry, len(entries))
	dirs := map[string]bool{}
	for _, e := range entries {
		want[e.Path] = e
		if e.IsDir() {
			dirs[e.Path] = true
		}
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	if !r.partial {
		if err := r.prune(want, dirs); err != nil {
			return err
		}
	}
	r.madeDir = map[string]bool{}
	for _, e := range entries {
		if err := r.parents(e.Path); err != nil {
			return err
		}
		switch {
		case e.IsDir():
			if err := r.dir(e.Path, e.Mode.Perm(), true); err != nil {
				return err
			}
		case e.IsLink():
			if cur, err := r.root.Readlink(e.Path); err == nil && cur == e.Link {
				continue
			}
			if err := r.root.RemoveAll(e.Path); err != nil {
				return err
			}
			if err := r.root.Symlink(e.Link, e.Path); err != nil {
				return err
			}
		default:
			r.st.Files++
			r.st.Bytes += e.Size
			same, err := r.same(e)
			if err != nil {
				return err
			}
			if same {
				continue
			}
			if e.Size == 0 {
				if err := r.write(e, bytes.NewReader(nil)); err != nil {
					return err
				}
				continue
			}
			fetch[e.Pack] = append(fetch[e.Pack], target{r: r, e: e})
		}
	}
	return nil
}

// prune removes what the tree does not hold, leaving alone what Skip
// leaves out.
func (r *restorer) prune(want map[string]Entry, dirs map[string]bool) error {
	var doomed []string
	err := fs.WalkDir(r.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if r.tree.Skip != nil && r.tree.Skip(p, d.IsDir()) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() && dirs[p] {
			return nil
		}
		if e, ok := want[p]; ok && !d.IsDir() && e.IsLink() == (d.Type()&fs.ModeSymlink != 0) {
			return nil
		}
		doomed = append(doomed, p)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("scan: %w", err)
	}
	for _, p := range doomed {
		if err := r.root.RemoveAll(p); err != nil {
			return err
		}
	}
	return nil
}

// parents makes sure every parent of p is a real directory, replacing a
// file or symlink in the way, so nothing is written through a link.
func (r *restorer) parents(p string) error {
	d := path.Dir(p)
	if d == "." || r.madeDir[d] {
		return nil
	}
	if err := r.parents(d); err != nil {
		return err
	}
	return r.dir(d, 0o755, false)
}

// dir makes p a real directory; exact also sets the mode of one that
// exists (an empty directory of the tree, not a parent made on the way).
func (r *restorer) dir(p string, perm fs.FileMode, exact bool) error {
	info, err := r.root.Lstat(p)
	switch {
	case err == nil && info.IsDir():
		if exact && info.Mode().Perm() != perm {
			if err := r.root.Chmod(p, perm); err != nil {
				return err
			}
		}
	case err == nil:
		if err := r.root.Remove(p); err != nil {
			return err
		}
		fallthrough
	case errors.Is(err, fs.ErrNotExist):
		if err := r.root.Mkdir(p, perm); err != nil {
			return err
		}
		if err := r.root.Chmod(p, perm); err != nil {
			return err
		}
	default:
		return err
	}
	r.madeDir[p] = true
	return nil
}

// same says the file at e.Path already holds e's content (by the cache,
// else by re-hashing), fixing its mode if only that differs.
func (r *restorer) same(e Entry) (bool, error) {
	info, err := r.root.Lstat(e.Path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !info.Mode().IsRegular() || info.Size() != e.Size {
		return false, nil
	}
	abs := filepath.Join(r.root.Name(), filepath.FromSlash(e.Path))
	sha, ok := r.s.Cache.lookup(abs, info)
	if !ok {
		f, err := r.root.Open(e.Path)
		if err != nil {
			return false, err
		}
		h := sha256.New()
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return false, err
		}
		sha = hexSum([sha256.Size]byte(h.Sum(nil)))
		r.s.Cache.remember(abs, info, sha)
	}
	if sha != e.SHA {
		return false, nil
	}
	if info.Mode().Perm() != e.Mode.Perm() {
		return true, r.root.Chmod(e.Path, e.Mode.Perm())
	}
	return true, nil
}

// write replaces whatever is at e.Path with a new file holding src, and
// checks the sha256 of what it wrote.
func (r *restorer) write(e Entry, src io.Reader) error {
	if err := r.root.RemoveAll(e.Path); err != nil {
		return err
	}
	f, err := r.root.OpenFile(e.Path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.Mode.Perm())
	if err != nil {
		return err
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), src)
	if err == nil && (n != e.Size || hexSum([sha256.Size]byte(h.Sum(nil))) != e.SHA) {
		err = fmt.Errorf("%s: content does not match its sha256", e.Path)
	}
	if err == nil {
		err = f.Chmod(e.Mode.Perm())
	}
	var info fs.FileInfo
	if err == nil {
		info, err = f.Stat()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.root.Remove(e.Path)
		return err
	}
	r.st.NewFiles++
	r.s.Cache.remember(filepath.Join(r.root.Name(), filepath.FromSlash(e.Path)), info, e.SHA)
	return nil
}
