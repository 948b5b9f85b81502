// Package plan materialises an artifacts render plan (events.RenderPlan)
// into an engine's isolated config dir: whole files written if changed,
// managed marker blocks inside shared memory files, managed keys of JSON
// settings, exclusive directories pruned, and the legacy command artifacts
// stripped. It is the contract's reference reader of a plan: artifacts
// renders plans and tests them with it, engine workers apply them with it.
// Standard library only, like the rest of pkg/events: no database, no
// network.
//
// Every path of a plan is relative to the config dir; Apply refuses a path
// that is absolute, climbs out with .., or passes through a symlink, so a
// plan can never write outside the dir it is applied to (and never into a
// user's repository).
package plan

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
)

// Report says what Apply changed, as paths relative to the config dir.
type Report struct {
	Written []string
	Removed []string
}

// Changed reports whether Apply touched anything.
func (r Report) Changed() bool { return len(r.Written)+len(r.Removed) > 0 }

// Resolve replaces events.ConfigDirToken in s with dir.
func Resolve(dir, s string) string { return strings.ReplaceAll(s, events.ConfigDirToken, dir) }

// Apply materialises p into dir, sequentially: prunes, files in plan order,
// then stripLegacyCommandArtifacts. It stops at the first error; what was
// written before it stays (every write is atomic and idempotent, so the
// next Apply completes the work).
func Apply(dir string, p events.RenderPlan) (Report, error) {
	var rep Report
	if !filepath.IsAbs(dir) {
		return rep, fmt.Errorf("apply plan: config dir %q is not absolute", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return rep, fmt.Errorf("apply plan: %w", err)
	}
	for _, pr := range p.Prune {
		if err := prune(dir, pr, &rep); err != nil {
			return rep, err
		}
	}
	for _, f := range p.Files {
		if err := applyFile(dir, f, &rep); err != nil {
			return rep, err
		}
	}
	if err := stripLegacyCommandArtifacts(dir, p.MemoryFile, p.LegacyCommandDirs, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// ErrUnsafePath is wrapped by every refusal of a path outside the config dir.
var ErrUnsafePath = errors.New("unsafe path in plan")

// SafeJoin joins rel to dir after checking that rel is relative, clean of
// .., and that no existing component below dir is a symlink.
func SafeJoin(dir, rel string) (string, error) {
	if rel == "" || filepath.IsAbs(rel) || strings.ContainsRune(rel, '\\') || strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("%w: %q", ErrUnsafePath, rel)
	}
	clean := filepath.Clean(rel)
	if clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || clean != rel {
		return "", fmt.Errorf("%w: %q", ErrUnsafePath, rel)
	}
	cur := dir
	for _, part := range strings.Split(clean, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("%w: %q passes through a symlink", ErrUnsafePath, rel)
		}
	}
	return filepath.Join(dir, clean), nil
}

func applyFile(dir string, f events.PlanFile, rep *Report) error {
	path, err := SafeJoin(dir, f.Path)
	if err != nil {
		return err
	}
	content := Resolve(dir, f.Content)
	var changed bool
	switch f.Ownership {
	case events.OwnWholeFile, "":
		mode := os.FileMode(f.Mode).Perm()
		if mode == 0 {
			mode = 0o644
		}
		changed, err = writeIfChanged(path, []byte(content), mode)
	case events.OwnMarkerBlock:
		changed, err = WriteManagedBlock(path, f.Region, content)
	case events.OwnManagedKeys:
		changed, err = writeManagedKeys(path, content)
	default:
		return fmt.Errorf("apply %s: unknown ownership %q", f.Path, f.Ownership)
	}
	if err != nil {
		return fmt.Errorf("apply %s: %w", f.Path, err)
	}
	if changed {
		rep.Written = append(rep.Written, f.Path)
	}
	return nil
}

// prune removes the entries of a directory the plan does not keep.
func prune(dir string, pr events.PlanPrune, rep *Report) error {
	path, err := SafeJoin(dir, pr.Dir)
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune %s: %w", pr.Dir, err)
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || slices.Contains(pr.Keep, name) {
			continue
		}
		if !pr.Exclusive && !slices.Contains(pr.Managed, name) {
			continue
		}
		// RemoveAll removes a symlink itself, never what it points to.
		if err := os.RemoveAll(filepath.Join(path, name)); err != nil {
			return fmt.Errorf("prune %s/%s: %w", pr.Dir, name, err)
		}
		rep.Removed = append(rep.Removed, pr.Dir+"/"+name)
	}
	return nil
}

// stripLegacyCommandArtifacts removes what older Clopen versions wrote for
// commands: when a legacy command dir exists it is emptied of everything but
// dot-files (the dirs are exclusive to Clopen in an isolated config dir),
// and the COMMANDS block is stripped from the memory file either way.
func stripLegacyCommandArtifacts(dir, memoryFile string, legacy []string, rep *Report) error {
	for _, d := range legacy {
		if err := prune(dir, events.PlanPrune{Dir: d, Exclusive: true}, rep); err != nil {
			return err
		}
	}
	if memoryFile == "" {
		return nil
	}
	path, err := SafeJoin(dir, memoryFile)
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	changed, err := WriteManagedBlock(path, RegionCommands, "")
	if err != nil {
		return err
	}
	if changed {
		rep.Written = append(rep.Written, memoryFile)
	}
	return nil
}

// writeManagedKeys sets the top-level keys of the JSON object content in
// the JSON object file (a null value deletes the key), keeping every other
// key. A file that is not a JSON object is left alone and reported.
func writeManagedKeys(file, content string) (bool, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(content), &keys); err != nil {
		return false, fmt.Errorf("managed keys: %w", err)
	}
	unlock, err := lockFile(file)
	if err != nil {
		return false, err
	}
	defer unlock()
	doc := map[string]json.RawMessage{}
	old, err := os.ReadFile(file)
	if err == nil && len(strings.TrimSpace(string(old))) > 0 {
		if err := json.Unmarshal(old, &doc); err != nil {
			return false, fmt.Errorf("%s is not a JSON object; not touching it: %w", file, err)
		}
	} else if err != nil && !os.IsNotExist(err) {
		return false, err
	}
	for k, v := range keys {
		if string(v) == "null" {
			delete(doc, k)
		} else {
			doc[k] = v
		}
	}
	if len(doc) == 0 && len(old) == 0 {
		return false, nil
	}
	out, err := json.MarshalIndent(doc, "", "  ") // map keys come out sorted: stable bytes
	if err != nil {
		return false, err
	}
	out = append(out, '\n')
	if string(out) == string(old) {
		return false, nil
	}
	return true, atomicWrite(file, out, 0o644)
}
