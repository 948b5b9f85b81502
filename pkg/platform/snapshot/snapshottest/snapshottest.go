// Package snapshottest builds snapshots for tests of the code that reads
// them.
package snapshottest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"clopen.dev/pkg/platform/snapshot"
)

// Workspace writes files (slash path: content) into dir, a fresh temporary
// one when dir is "", and captures dir as the tree "workspace" of snaps'
// tenant, from prev.
func Workspace(t testing.TB, snaps *snapshot.Snapshots, dir string, prev *snapshot.Manifest, files map[string]string) *snapshot.Manifest {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m, _, err := snaps.Capture(context.Background(), prev, map[string]snapshot.Tree{"workspace": {Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
