package snapshot

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/aymanbagabas/go-udiff"
)

// Patch is the unified diff of tree from a to b: text files only, a
// binary file or one over 1 MiB is named on a line of its own. Text holds at
// most limit bytes (0: no cap), cut at a file boundary; Truncated says
// something was left out.
type Patch struct {
	Text      string `json:"patch"`
	Truncated bool   `json:"truncated"`
}

// Patch diffs tree from a to b; a may be nil (everything is added).
func (s *Snapshots) Patch(ctx context.Context, a, b *Manifest, tree string, limit int) (Patch, error) {
	var out strings.Builder
	for _, c := range Diff(a, b, tree) {
		if err := ctx.Err(); err != nil {
			return Patch{}, err
		}
		part, err := s.filePatch(ctx, a, b, tree, c)
		if err != nil {
			return Patch{}, err
		}
		if limit > 0 && out.Len()+len(part) > limit {
			return Patch{Text: out.String(), Truncated: true}, nil
		}
		out.WriteString(part)
	}
	return Patch{Text: out.String()}, nil
}

// filePatch is the part of a patch for one change.
func (s *Snapshots) filePatch(ctx context.Context, a, b *Manifest, tree string, c Change) (string, error) {
	oldName, newName := "a/"+c.Path, "b/"+c.Path
	switch c.Kind {
	case "added":
		oldName = "/dev/null"
	case "deleted":
		newName = "/dev/null"
	}
	before, okA, err := s.side(ctx, a, tree, c.Path)
	if err != nil {
		return "", err
	}
	after, okB, err := s.side(ctx, b, tree, c.Path)
	if err != nil {
		return "", err
	}
	switch {
	case !okA || !okB:
		return fmt.Sprintf("Large files %s and %s differ (not shown)\n", oldName, newName), nil
	case bytes.IndexByte(before, 0) >= 0 || bytes.IndexByte(after, 0) >= 0:
		return fmt.Sprintf("Binary files %s and %s differ\n", oldName, newName), nil
	}
	text := udiff.Unified(oldName, newName, string(before), string(after))
	if text == "" { // same bytes, another mode
		return fmt.Sprintf("diff %s %s: mode changed\n", oldName, newName), nil
	}
	return text, nil
}

// side reads what a patch shows of path in m: nothing when it is absent,
// a symlink's target, a regular file's content; ok is false for a file
// too large to show.
func (s *Snapshots) side(ctx context.Context, m *Manifest, tree, path string) ([]byte, bool, error) {
	if m == nil {
		return nil, true, nil
	}
	e, found := m.Find(tree, path)
	switch {
	case !found || e.IsDir():
		return nil, true, nil
	case e.IsLink():
		return []byte(e.Link + "\n"), true, nil
	}
	return s.small(ctx, m, tree, path)
}

// small reads path's content from m if it is a regular file of up to 1
// MiB; ok is false otherwise.
func (s *Snapshots) small(ctx context.Context, m *Manifest, tree, path string) ([]byte, bool, error) {
	e, ok := m.Find(tree, path)
	if !ok || !e.IsFile() || e.Size > maxLineCount {
		return nil, false, nil
	}
	rc, _, err := s.Open(ctx, m, tree, path)
	if err != nil {
		return nil, false, fmt.Errorf("patch: %w", err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, false, fmt.Errorf("patch %s: %w", path, err)
	}
	return data, true, nil
}
