package snapshot

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// Limits on what a decoded manifest may hold; a manifest beyond them is
// refused rather than trusted.
const (
	maxManifestBytes = 256 << 20 // decompressed JSON
	maxEntries       = 2_000_000
	maxFileSize      = 1 << 40
	maxPathLen       = 4096
	maxTrees         = 256
)

// Entry is one file, symlink or empty directory of a tree.
type Entry struct {
	Path string      `json:"path"` // slash-separated, relative to the tree
	Mode fs.FileMode `json:"mode"` // perm bits of a regular file, fs.ModeSymlink, or fs.ModeDir|perm for an empty dir
	Size int64       `json:"size"`
	SHA  string      `json:"sha256,omitempty"`
	Link string      `json:"link,omitempty"` // symlink target, relative and inside the tree
	Pack string      `json:"pack,omitempty"` // sha256 of the pack holding the content; "" for an empty file
	Off  int64       `json:"off,omitempty"`
}

// IsFile says e is a regular file.
func (e Entry) IsFile() bool { return e.Mode&fs.ModeType == 0 }

// IsLink says e is a symlink.
func (e Entry) IsLink() bool { return e.Mode&fs.ModeSymlink != 0 }

// IsDir says e is an empty directory.
func (e Entry) IsDir() bool { return e.Mode&fs.ModeDir != 0 }

// Manifest is one snapshot: the entries of every captured tree.
type Manifest struct {
	ID      string             `json:"-"` // sha256 of the stored object, set by Load and Capture
	Parent  string             `json:"parent,omitempty"`
	Trees   map[string][]Entry `json:"trees"` // each sorted by path
	Created time.Time          `json:"created"`
	// Partial names the trees captured with a Match: restoring them is
	// additive and never deletes.
	Partial map[string]bool `json:"partial,omitempty"`
}

// Find returns the entry at path in tree.
func (m *Manifest) Find(tree, p string) (Entry, bool) {
	entries := m.Trees[tree]
	i := sort.Search(len(entries), func(i int) bool { return entries[i].Path >= p })
	if i < len(entries) && entries[i].Path == p {
		return entries[i], true
	}
	return Entry{}, false
}

func packName(tenant, sha string) string    { return tenant + "/packs/" + sha }
func manifestName(tenant, id string) string { return tenant + "/manifests/" + id }
func validSHA(s string) bool                { return len(s) == 64 && isLowerHex(s) }
func hexSum(sum [sha256.Size]byte) string   { return hex.EncodeToString(sum[:]) }
func manifestID(stored []byte) string       { return hexSum(sha256.Sum256(stored)) }

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validTenant refuses tenant tokens that could reach outside "<tenant>/".
func validTenant(t string) error {
	if t == "" || len(t) > 128 || t == "." || strings.Contains(t, "..") || strings.ContainsAny(t, "/\\*>") {
		return fmt.Errorf("snapshot: invalid tenant %q", t)
	}
	for _, r := range t {
		if r <= ' ' || r == 0x7f {
			return fmt.Errorf("snapshot: invalid tenant %q", t)
		}
	}
	return nil
}

// encodeManifest returns the stored form of m: gzip'ed JSON.
func encodeManifest(m *Manifest) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if err := json.NewEncoder(zw).Encode(m); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeManifest parses a stored manifest (gzip'ed or plain JSON) and
// validates it; data is untrusted.
func decodeManifest(data []byte) (*Manifest, error) {
	var r io.Reader = bytes.NewReader(data)
	if len(data) >= 2 && data[0] == 0x1f && data[1] == 0x8b {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return nil, fmt.Errorf("decode manifest: %w", err)
		}
		r = zr
	}
	raw, err := io.ReadAll(io.LimitReader(r, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if len(raw) > maxManifestBytes {
		return nil, errors.New("decode manifest: too large")
	}
	var m Manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("decode manifest: %w", err)
	}
	if err := m.validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// validate checks everything Restore relies on, whoever built m.
func (m *Manifest) validate() error {
	if m.Parent != "" && !validSHA(m.Parent) {
		return fmt.Errorf("manifest: invalid parent %q", m.Parent)
	}
	if len(m.Trees) > maxTrees {
		return fmt.Errorf("manifest: %d trees", len(m.Trees))
	}
	total := 0
	for name, entries := range m.Trees {
		if !validRel(name) {
			return fmt.Errorf("manifest: invalid tree name %q", name)
		}
		total += len(entries)
		if total > maxEntries {
			return errors.New("manifest: too many entries")
		}
		if err := validateTree(entries); err != nil {
			return fmt.Errorf("manifest: tree %s: %w", name, err)
		}
	}
	for name := range m.Partial {
		if _, ok := m.Trees[name]; !ok {
			return fmt.Errorf("manifest: partial names unknown tree %q", name)
		}
	}
	return nil
}

func validateTree(entries []Entry) error {
	// Paths that may not have anything below them: files and symlinks.
	leaves := make(map[string]bool, len(entries))
	for i, e := range entries {
		if !validRel(e.Path) {
			return fmt.Errorf("invalid path %q", e.Path)
		}
		if i > 0 && entries[i-1].Path >= e.Path {
			return fmt.Errorf("entries not sorted or duplicated at %q", e.Path)
		}
		if err := validateEntry(e); err != nil {
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		if !e.IsDir() {
			leaves[e.Path] = true
		}
	}
	for _, e := range entries {
		for dir := path.Dir(e.Path); dir != "."; dir = path.Dir(dir) {
			if leaves[dir] {
				return fmt.Errorf("%s lies below the file or symlink %s", e.Path, dir)
			}
		}
	}
	return nil
}

func validateEntry(e Entry) error {
	switch {
	case e.Mode&^fs.ModePerm == 0: // regular file
		if e.Size < 0 || e.Size > maxFileSize || e.Off < 0 || e.Off > maxFileSize {
			return fmt.Errorf("size %d at offset %d out of range", e.Size, e.Off)
		}
		if !validSHA(e.SHA) {
			return fmt.Errorf("invalid sha256 %q", e.SHA)
		}
		if (e.Pack != "" || e.Size > 0) && !validSHA(e.Pack) {
			return fmt.Errorf("invalid pack %q", e.Pack)
		}
		if e.Link != "" {
			return errors.New("regular file with a link target")
		}
	case e.Mode == fs.ModeSymlink:
		if !linkInside(e.Path, e.Link) {
			return fmt.Errorf("symlink target %q leaves the tree", e.Link)
		}
		if e.Size != 0 || e.SHA != "" || e.Pack != "" || e.Off != 0 {
			return errors.New("symlink with content")
		}
	case e.Mode&^(fs.ModeDir|fs.ModePerm) == 0: // ModeDir is set: the first case took the rest
		if e.Size != 0 || e.SHA != "" || e.Pack != "" || e.Link != "" || e.Off != 0 {
			return errors.New("directory with content")
		}
	default:
		return fmt.Errorf("unsupported mode %v", e.Mode)
	}
	return nil
}

// validRel says p is a clean, relative, slash-separated path without "..".
func validRel(p string) bool {
	return p != "." && len(p) <= maxPathLen && fs.ValidPath(p) && !strings.ContainsAny(p, "\x00\\")
}

// linkInside says a symlink at p with target link resolves inside the
// tree. The target must be relative and clean, so any ".." are its leading
// elements, and there may be no more of them than p has parent directories:
// the kernel resolves ".." physically, and the parents of p are real
// directories (nothing lies below a symlink), so the walk goes up no further
// than the tree's root and only down after that.
func linkInside(p, link string) bool {
	if link == "" || len(link) > maxPathLen || strings.ContainsAny(link, "\x00") || path.IsAbs(link) || path.Clean(link) != link {
		return false
	}
	ups := 0
	for _, el := range strings.Split(link, "/") {
		if el != ".." {
			break
		}
		ups++
	}
	return ups <= strings.Count(p, "/")
}

// Load fetches and validates the tenant's manifest id (from the memo, when
// it holds it).
func (s *Snapshots) Load(ctx context.Context, id string) (*Manifest, error) {
	if err := validTenant(s.Tenant); err != nil {
		return nil, err
	}
	if !validSHA(id) {
		return nil, fmt.Errorf("load manifest: invalid id %q", id)
	}
	if m := s.Memo.get(s.Tenant, id); m != nil {
		return m, nil
	}
	rc, err := s.Store.Get(ctx, manifestName(s.Tenant, id))
	if err != nil {
		return nil, fmt.Errorf("load manifest %s: %w", id, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, maxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("load manifest %s: %w", id, err)
	}
	if manifestID(data) != id {
		return nil, fmt.Errorf("load manifest %s: content does not match its id", id)
	}
	m, err := decodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("load manifest %s: %w", id, err)
	}
	m.ID = id
	s.Memo.put(s.Tenant, m)
	return m, nil
}

// WorkspaceTree is the tree that holds a session's (and a project base's)
// working files; a session restores it into its workspace.
const WorkspaceTree = "workspace"
