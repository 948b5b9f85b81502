package plan

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Marker region ids.
const (
	RegionSkills       = "SKILLS"
	RegionCommands     = "COMMANDS" // legacy: only ever stripped
	RegionSubagents    = "SUBAGENTS"
	RegionInstructions = "INSTRUCTIONS"
)

// StartMarker is the line that opens the managed block id.
func StartMarker(id string) string {
	return "<!-- CLOPEN:" + id + ":START — managed block, do not edit -->"
}

// EndMarker is the line that closes the managed block id.
func EndMarker(id string) string { return "<!-- CLOPEN:" + id + ":END -->" }

var (
	validRegion = regexp.MustCompile(`^[A-Z][A-Z0-9_]*$`)
	blankRuns   = regexp.MustCompile(`\n{3,}`)
)

func blockPattern(id string) *regexp.Regexp {
	return regexp.MustCompile(`(?s)\n*` + regexp.QuoteMeta(StartMarker(id)) + `.*?` + regexp.QuoteMeta(EndMarker(id)) + `\n*`)
}

// RenderManagedBlock returns text with every block id removed (with the
// blank lines around it, runs of blank lines collapsed, the rest trimmed)
// and, unless block is blank, one block holding block (trimmed) appended
// after the user's content.
func RenderManagedBlock(text, id, block string) string {
	rest := blockPattern(id).ReplaceAllString(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n")
	rest = strings.TrimSpace(blankRuns.ReplaceAllString(rest, "\n\n"))
	block = strings.TrimSpace(block)
	var b strings.Builder
	if rest != "" {
		b.WriteString(rest)
		b.WriteString("\n")
		if block != "" {
			b.WriteString("\n")
		}
	}
	if block != "" {
		b.WriteString(StartMarker(id) + "\n" + block + "\n" + EndMarker(id) + "\n")
	}
	return b.String()
}

// ReadManagedBlock returns the inner body of the first block id in text and
// whether there is one.
func ReadManagedBlock(text, id string) (string, bool) {
	start, end := StartMarker(id), EndMarker(id)
	i := strings.Index(text, start)
	if i < 0 {
		return "", false
	}
	rest := text[i+len(start):]
	j := strings.Index(rest, end)
	if j < 0 {
		return "", false
	}
	return strings.TrimSpace(rest[:j]), true
}

// WriteManagedBlock rewrites the managed block id of file to hold block:
// every existing block id is stripped, the user's content kept, and the new
// block appended after it; a blank block only removes. Parent dirs are
// created. The file is written (atomically) only when its bytes change, and
// not at all when it holds exactly this block already wherever it sits, so
// blocks written in a fixed order do not churn. Calls for one file are
// serialised, within the process and across processes, so concurrent
// writers of different blocks never lose one. It reports whether the file
// changed.
func WriteManagedBlock(file, id, block string) (bool, error) {
	if !validRegion.MatchString(id) {
		return false, fmt.Errorf("managed block id %q: want upper-case letters", id)
	}
	unlock, err := lockFile(file)
	if err != nil {
		return false, err
	}
	defer unlock()
	old, err := os.ReadFile(file)
	exists := err == nil
	if err != nil && !os.IsNotExist(err) {
		return false, fmt.Errorf("read %s: %w", file, err)
	}
	text := string(old)
	if body, ok := ReadManagedBlock(text, id); ok && body == strings.TrimSpace(block) && strings.Count(text, StartMarker(id)) == 1 && body != "" {
		return false, nil
	}
	out := RenderManagedBlock(text, id, block)
	if out == text || (!exists && out == "") {
		return false, nil
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(file); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := atomicWrite(file, []byte(out), mode); err != nil {
		return false, err
	}
	return true, nil
}

// writeIfChanged writes data to file atomically unless it already holds
// exactly data with mode.
func writeIfChanged(file string, data []byte, mode os.FileMode) (bool, error) {
	unlock, err := lockFile(file)
	if err != nil {
		return false, err
	}
	defer unlock()
	if fi, err := os.Lstat(file); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm() == mode {
		if old, err := os.ReadFile(file); err == nil && bytes.Equal(old, data) {
			return false, nil
		}
	}
	return true, atomicWrite(file, data, mode)
}

// atomicWrite writes data to a temporary file beside file and renames it
// over file, so a reader sees the old bytes or the new, never a mix.
func atomicWrite(file string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	name := tmp.Name()
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Chmod(mode)
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(name, file)
	}
	if werr != nil {
		_ = os.Remove(name)
		return fmt.Errorf("write %s: %w", file, werr)
	}
	return nil
}
