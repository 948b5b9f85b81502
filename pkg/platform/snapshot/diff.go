package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"io"
)

// maxLineCount is the largest file whose lines CountLines counts.
const maxLineCount = 1 << 20

// Change is one path that differs between two manifests' trees.
type Change struct {
	Path    string `json:"path"`
	Kind    string `json:"kind"` // added, changed or deleted
	Added   int    `json:"linesAdded"`
	Removed int    `json:"linesRemoved"`
	Binary  bool   `json:"binary,omitempty"`
}

// Diff lists the files and symlinks of tree that differ from a to b, by
// path; a may be nil (everything is added). Line counts are left to
// CountLines.
func Diff(a, b *Manifest, tree string) []Change {
	var old, cur []Entry
	if a != nil {
		old = a.Trees[tree]
	}
	if b != nil {
		cur = b.Trees[tree]
	}
	var out []Change
	i, j := 0, 0
	for i < len(old) || j < len(cur) {
		switch {
		case j == len(cur) || i < len(old) && old[i].Path < cur[j].Path:
			if !old[i].IsDir() {
				out = append(out, Change{Path: old[i].Path, Kind: "deleted"})
			}
			i++
		case i == len(old) || cur[j].Path < old[i].Path:
			if !cur[j].IsDir() {
				out = append(out, Change{Path: cur[j].Path, Kind: "added"})
			}
			j++
		default:
			o, c := old[i], cur[j]
			if !c.IsDir() && (o.Mode != c.Mode || o.SHA != c.SHA || o.Link != c.Link) {
				out = append(out, Change{Path: c.Path, Kind: "changed"})
			}
			i++
			j++
		}
	}
	return out
}

// CountLines fills in Added and Removed for the changes of regular files
// up to 1 MiB on each side, and marks files holding a NUL byte Binary.
// Each side's files are read in pack order, each pack once (a turn that
// adds thousands of files reads what it stored, not a pack per file), and
// kept as line hashes only.
func (s *Snapshots) CountLines(ctx context.Context, a, b *Manifest, tree string, changes []Change) error {
	paths := make(map[string]bool, len(changes))
	for _, c := range changes {
		paths[c.Path] = true
	}
	before, err := s.lines(ctx, a, tree, paths)
	if err != nil {
		return err
	}
	after, err := s.lines(ctx, b, tree, paths)
	if err != nil {
		return err
	}
	for i := range changes {
		c := &changes[i]
		x, okA := before[c.Path]
		y, okB := after[c.Path]
		if !okA && !okB {
			continue
		}
		if x.binary || y.binary {
			c.Binary = true
			continue
		}
		c.Added, c.Removed = lineDelta(x.hashes, y.hashes)
	}
	return nil
}

// fileLines is what CountLines keeps of one side of a change.
type fileLines struct {
	hashes []uint64
	binary bool
}

// lines reads the regular files of m's tree at paths that CountLines
// counts (up to 1 MiB), as line hashes.
func (s *Snapshots) lines(ctx context.Context, m *Manifest, tree string, paths map[string]bool) (map[string]fileLines, error) {
	out := map[string]fileLines{}
	if m == nil || len(paths) == 0 {
		return out, nil
	}
	keep := func(e Entry) bool { return paths[e.Path] && e.Size <= maxLineCount }
	err := s.FilesOf(ctx, m, tree, keep, func(e Entry, r io.Reader) error {
		data, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if bytes.IndexByte(data, 0) >= 0 {
			out[e.Path] = fileLines{binary: true}
		} else {
			out[e.Path] = fileLines{hashes: splitLines(data)}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("count lines: %w", err)
	}
	return out, nil
}

// splitLines hashes each line, its newline included, so a missing final
// newline counts as a change of the last line.
func splitLines(data []byte) []uint64 {
	var out []uint64
	for len(data) > 0 {
		n := bytes.IndexByte(data, '\n') + 1
		if n == 0 {
			n = len(data)
		}
		h := fnv.New64a()
		h.Write(data[:n])
		out = append(out, h.Sum64())
		data = data[n:]
	}
	return out
}

// maxEdits bounds the diff search; past it the differing middle counts as
// wholly removed and added.
const maxEdits = 4096

// lineDelta returns the lines added and removed by a shortest edit script
// from a to b (Myers' O(ND) search on the part between common ends).
func lineDelta(a, b []uint64) (added, removed int) {
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		a, b = a[1:], b[1:]
	}
	for len(a) > 0 && len(b) > 0 && a[len(a)-1] == b[len(b)-1] {
		a, b = a[:len(a)-1], b[:len(b)-1]
	}
	n, m := len(a), len(b)
	if n == 0 || m == 0 {
		return m, n
	}
	limit := min(n+m, maxEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	for d := 0; d <= limit; d++ {
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1] // a step down: insert from b
			} else {
				x = v[off+k-1] + 1 // a step right: delete from a
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				// d edits, and inserts minus deletes is m-n.
				return (d + m - n) / 2, (d - m + n) / 2
			}
		}
	}
	return m, n
}
