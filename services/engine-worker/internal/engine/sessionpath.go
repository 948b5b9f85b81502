package engine

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf16"
)

// maxSlug is how long a path slug may be before the CLIs that make one
// (Claude Code, Qwen Code) cut it and add a hash of the whole path.
const maxSlug = 200

// PathSlug is the directory name Claude Code and Qwen Code give a project
// of working directory dir: every character but ASCII letters and digits
// becomes '-'. A slug over 200 characters is cut there by Claude Code and
// followed by '-' and a base-36 hash of dir; the hash here is the common
// h = 31*h + c string hash over UTF-16 code units, an assumption that no
// test checks (the worker's workspace paths stay under 200 characters
// unless its workspaces dir is over about 80). The path is taken as the
// CLI sees its working directory: symbolic links resolved.
func PathSlug(dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	slug := []byte(dir)
	for i, c := range slug {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			slug[i] = '-'
		}
	}
	// A non-ASCII character is one '-' per UTF-16 code unit in the CLIs,
	// one per byte here: the same only for ASCII paths, which is what the
	// worker's workspaces are.
	s := string(slug)
	if len(s) <= maxSlug {
		return s
	}
	var h int32
	for _, u := range utf16.Encode([]rune(dir)) {
		h = 31*h + int32(u)
	}
	abs := int64(h)
	if abs < 0 {
		abs = -abs
	}
	return s[:maxSlug] + "-" + strconv.FormatInt(abs, 36)
}

// NamesSession returns a Match for files that hold engine session id in
// their names ("" matches nothing: a turn whose session is unknown has
// no files to carry).
func NamesSession(id string) func(rel string) bool {
	return func(rel string) bool {
		return id != "" && strings.Contains(filepath.Base(filepath.FromSlash(rel)), id)
	}
}
