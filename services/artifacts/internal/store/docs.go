package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"clopen.dev/services/artifacts/internal/skills"
)

// Docs keeps documents on disk: <Root>/<tenant>/skills/<slug>/SKILL.md (and
// the skill's other files) and <Root>/<tenant>/subagents/<slug>.md. An
// adopted entry is a symlink to a folder or file under one of Adoptable;
// reads follow a symlink only into the tenant's own dir or those roots.
type Docs struct {
	Root      string
	Adoptable []string // absolute dirs adopted entries may point into
}

// Limits on what a skill folder may hold.
const (
	maxFileBytes  = 1 << 20
	maxSkillFiles = 200
)

func (d *Docs) tenantDir(tenant string) (string, error) {
	if _, err := uuid.Parse(tenant); err != nil {
		return "", fmt.Errorf("%w: tenant id", ErrInvalid)
	}
	return filepath.Join(d.Root, tenant), nil
}

// SkillDir is the folder of skill slug.
func (d *Docs) SkillDir(tenant, slug string) (string, error) {
	return d.entry(tenant, "skills", slug, "")
}

// SubagentFile is the document of subagent slug.
func (d *Docs) SubagentFile(tenant, slug string) (string, error) {
	return d.entry(tenant, "subagents", slug, ".md")
}

func (d *Docs) entry(tenant, kind, slug, ext string) (string, error) {
	if !skills.ValidSlug(slug) {
		return "", fmt.Errorf("%w: slug %q", ErrInvalid, slug)
	}
	dir, err := d.tenantDir(tenant)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, kind, slug+ext), nil
}

// check resolves path's symlinks and refuses a target outside the tenant's
// dir and the adoptable roots.
func (d *Docs) check(tenant, path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	dir, _ := d.tenantDir(tenant)
	roots := append([]string{dir}, d.Adoptable...)
	for _, r := range roots {
		if rr, err := filepath.EvalSymlinks(r); err == nil && within(rr, real) {
			return real, nil
		}
	}
	return "", fmt.Errorf("%w: %s points outside the artifact store", ErrInvalid, path)
}

func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && !filepath.IsAbs(rel)
}

// ReadSkill returns the files of a skill folder by relative path.
func (d *Docs) ReadSkill(tenant, slug string) (map[string]string, error) {
	dir, err := d.SkillDir(tenant, slug)
	if err != nil {
		return nil, err
	}
	real, err := d.check(tenant, dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	err = filepath.WalkDir(real, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if p != real && strings.HasPrefix(e.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") {
			return nil // nested symlinks and specials are not carried
		}
		if len(files) >= maxSkillFiles {
			return fmt.Errorf("%w: skill %s has more than %d files", ErrInvalid, slug, maxSkillFiles)
		}
		info, err := e.Info()
		if err != nil || info.Size() > maxFileBytes {
			return fmt.Errorf("%w: %s is larger than %d bytes", ErrInvalid, p, maxFileBytes)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(real, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := files["SKILL.md"]; !ok {
		return nil, ErrNotFound
	}
	return files, nil
}

// ReadFile returns one document (a subagent's).
func (d *Docs) ReadFile(tenant, path string) (string, error) {
	real, err := d.check(tenant, path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", ErrNotFound
	}
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(real)
	return string(b), err
}

// Write replaces the document at path atomically. An adopted (symlinked)
// entry is read-only here: it is edited where it lives.
func (d *Docs) Write(path, content string) error {
	for p := path; p != d.Root && p != filepath.Dir(p); p = filepath.Dir(p) {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is adopted from elsewhere; edit it there", ErrConflict, filepath.Base(p))
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := tmp.WriteString(content)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), path)
	}
	if werr != nil {
		_ = os.Remove(tmp.Name())
	}
	return werr
}

// Remove deletes an entry (for a symlink, the link only).
func (d *Docs) Remove(path string) error {
	err := os.RemoveAll(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// Link makes the entry at path a symlink to target, replacing what was
// there. target must lie under an adoptable root.
func (d *Docs) Link(path, target string) error {
	real, err := filepath.EvalSymlinks(target)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	ok := false
	for _, r := range d.Adoptable {
		if rr, err := filepath.EvalSymlinks(r); err == nil && within(rr, real) && rr != real {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s is not inside a directory that may be adopted from", ErrInvalid, target)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	return os.Symlink(real, path)
}
