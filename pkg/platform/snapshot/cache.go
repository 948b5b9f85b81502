package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// cacheFile is the Cache's file inside its directory.
const cacheFile = "hashes.json"

// maxCached bounds the Cache; past it the oldest half is dropped.
const maxCached = 1_000_000

// racyWindow: a file modified this recently may change again within the
// same mtime tick without its stat changing, so its hash is not cached.
const racyWindow = 2 * time.Second

// Cache remembers the sha256 of files by (path, size, mtime, ctime, inode) so
// a capture does not re-read files that did not change, and a restore does
// not re-hash files it can compare by stat. It is worker-local, persisted in
// its directory by Save (Capture and Restore call it), and safe for
// concurrent use.
type Cache struct {
	dir string

	mu    sync.Mutex
	files map[string]cached
	gen   int64
	dirty bool
}

type cached struct {
	Size  int64  `json:"s"`
	MTime int64  `json:"m"`
	CTime int64  `json:"c"`
	Inode uint64 `json:"i"`
	SHA   string `json:"h"`
	Gen   int64  `json:"g"`
}

// NewCache opens the cache persisted in dir, creating dir if needed. An
// unreadable cache file is discarded: the cache only saves work.
func NewCache(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("snapshot cache: %w", err)
	}
	c := &Cache{dir: dir, files: map[string]cached{}}
	data, err := os.ReadFile(filepath.Join(dir, cacheFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot cache: %w", err)
	}
	if err == nil && json.Unmarshal(data, &c.files) != nil {
		c.files = map[string]cached{}
	}
	for _, f := range c.files {
		c.gen = max(c.gen, f.Gen)
	}
	return c, nil
}

func statKey(info fs.FileInfo) cached {
	ino, ctime := inodeCtime(info)
	return cached{Size: info.Size(), MTime: info.ModTime().UnixNano(), CTime: ctime, Inode: ino}
}

func (k cached) same(o cached) bool {
	return k.Size == o.Size && k.MTime == o.MTime && k.CTime == o.CTime && k.Inode == o.Inode
}

// lookup returns the cached sha256 of the file at abs, if its stat still
// matches.
func (c *Cache) lookup(abs string, info fs.FileInfo) (string, bool) {
	if c == nil {
		return "", false
	}
	key := statKey(info)
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.files[abs]
	if !ok || !f.same(key) {
		return "", false
	}
	if f.Gen != c.gen {
		// In memory only: a use alone does not make Save rewrite the
		// file (every capture of a large workspace used to), so after a
		// restart an entry may look up to saveEvery generations older.
		f.Gen = c.gen
		c.files[abs] = f
	}
	return f.SHA, true
}

// remember records sha for the file at abs as of info.
func (c *Cache) remember(abs string, info fs.FileInfo, sha string) {
	if c == nil || time.Since(info.ModTime()) < racyWindow {
		return
	}
	key := statKey(info)
	key.SHA = sha
	c.mu.Lock()
	defer c.mu.Unlock()
	key.Gen = c.gen
	c.files[abs] = key
	c.dirty = true
}

// saveEvery is how many generations may pass before Save writes what only
// lookups changed (the entries' generations).
const saveEvery = 16

// Save writes the cache to its directory if entries were added, or every
// saveEvery generations, and starts a new generation: entries unused for
// many generations are the first dropped.
func (c *Cache) Save() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	if !c.dirty && c.gen%saveEvery != 0 {
		return nil
	}
	if len(c.files) > maxCached {
		c.evictLocked()
	}
	data, err := json.Marshal(c.files)
	if err != nil {
		return fmt.Errorf("save snapshot cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.dir, cacheFile+".*")
	if err != nil {
		return fmt.Errorf("save snapshot cache: %w", err)
	}
	_, err = tmp.Write(data)
	err = errors.Join(err, tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(c.dir, cacheFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("save snapshot cache: %w", err)
	}
	c.dirty = false
	return nil
}

// evictLocked drops the entries least recently used until half remain.
func (c *Cache) evictLocked() {
	gens := make([]int64, 0, len(c.files))
	for _, f := range c.files {
		gens = append(gens, f.Gen)
	}
	slices.Sort(gens)
	cut := gens[len(gens)/2]
	for k, f := range c.files {
		if f.Gen < cut || len(c.files) > maxCached/2 && f.Gen == cut {
			delete(c.files, k)
		}
	}
}
