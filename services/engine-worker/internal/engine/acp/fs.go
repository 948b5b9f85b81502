package acp

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxReadBytes caps what fs/read_text_file returns.
const maxReadBytes = 16 << 20

// CodeResourceNotFound is ACP's error code for a file that does not exist;
// agents test for it (Gemini: "Resource not found") to tell a new file from
// a failure.
const CodeResourceNotFound = -32002

// fsError is the JSON-RPC error of a failed fs request.
func fsError(err error) (int, string) {
	if errors.Is(err, fs.ErrNotExist) {
		return CodeResourceNotFound, "Resource not found: " + err.Error()
	}
	return CodeRefused, err.Error()
}

// errOutside is the error of a path that leaves the workspace.
var errOutside = errors.New("outside the project")

// confine resolves path, absolute or relative to root, to a real path
// inside root. It refuses paths that leave root lexically (..) and paths
// whose existing part resolves through a symlink to outside root. The
// file itself need not exist (for writes): its deepest existing ancestor
// is resolved instead.
func confine(root, path string) (string, error) {
	if root == "" {
		return "", fmt.Errorf("%s: %w (no workspace)", path, errOutside)
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", root, err)
	}
	p := path
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p = filepath.Clean(p)
	if !within(filepath.Clean(root), p) && !within(realRoot, p) {
		return "", fmt.Errorf("%s: %w", path, errOutside)
	}
	// Resolve the deepest existing ancestor, then re-attach the rest.
	existing, rest := p, ""
	for {
		real, err := filepath.EvalSymlinks(existing)
		if err == nil {
			resolved := filepath.Join(real, rest)
			if !within(realRoot, resolved) {
				return "", fmt.Errorf("%s: %w (through a symlink)", path, errOutside)
			}
			return resolved, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			return "", fmt.Errorf("%s: %w", path, errOutside)
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// readTextFile serves fs/read_text_file inside root: the whole file, or
// limit lines from line (1-based).
func readTextFile(root string, r ReadTextFileRequest) (string, error) {
	p, err := confine(root, r.Path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	if info.IsDir() {
		return "", fmt.Errorf("%s is a directory", r.Path)
	}
	if info.Size() > maxReadBytes {
		return "", fmt.Errorf("%s is larger than %d bytes", r.Path, maxReadBytes)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	text := string(data)
	if r.Line == nil && r.Limit == nil {
		return text, nil
	}
	lines := strings.SplitAfter(text, "\n")
	start := 0
	if r.Line != nil && *r.Line > 1 {
		start = min(*r.Line-1, len(lines))
	}
	end := len(lines)
	if r.Limit != nil && *r.Limit >= 0 {
		end = min(start+*r.Limit, len(lines))
	}
	return strings.Join(lines[start:end], ""), nil
}

// writeTextFile serves fs/write_text_file inside root, creating parent
// directories (inside root) as needed.
func writeTextFile(root string, r WriteTextFileRequest) error {
	p, err := confine(root, r.Path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(r.Content), 0o644)
}
