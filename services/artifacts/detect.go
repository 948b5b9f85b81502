package artifacts

import (
	"context"
	"os"
	"path/filepath"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/svc"
	"clopen.dev/services/artifacts/internal/frontmatter"
	"clopen.dev/services/artifacts/internal/skills"
)

// detect lists Clopen's own entries of a type (managed) and what the
// engine's real dirs hold (adoptable), deduplicated by slug, Clopen's first.
func (a *api) detect(ctx context.Context, t string, r events.DetectRequest) ([]events.DetectedArtifact, error) {
	if !r.Engine.Valid() {
		return nil, svc.Invalid("engine %q: unknown", r.Engine)
	}
	out := []events.DetectedArtifact{}
	seen := map[string]bool{}
	switch r.Type {
	case events.ArtifactSkill:
		list, err := a.st.ListSkills(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			dir, _ := a.st.Docs.SkillDir(t, s.Slug)
			out = append(out, events.DetectedArtifact{Slug: s.Slug, Name: s.Name, Description: s.Description, Path: dir, Managed: true})
			seen[s.Slug] = true
		}
	case events.ArtifactSubagent:
		list, err := a.st.ListSubagents(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, s := range list {
			path, _ := a.st.Docs.SubagentFile(t, s.Slug)
			out = append(out, events.DetectedArtifact{Slug: s.Slug, Name: s.Name, Description: s.Description, Path: path, Managed: true})
			seen[s.Slug] = true
		}
	default:
		return nil, svc.Invalid("type %q: detect handles skill and subagent", r.Type)
	}
	for _, dir := range a.realDirs(r.Type, r.Engine) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			slug, doc := realEntry(r.Type, dir, e.Name())
			if slug == "" || seen[slug] {
				continue
			}
			seen[slug] = true
			name, desc := slug, ""
			if fm, err := frontmatter.Parse(readCapped(doc)); err == nil {
				name = orDefault(fm.Value("name"), slug)
				desc = fm.Value("description")
			}
			out = append(out, events.DetectedArtifact{Slug: slug, Name: name, Description: desc, Path: filepath.Join(dir, e.Name()), Adoptable: true})
		}
	}
	return out, nil
}

// realEntry returns the slug and document of an entry of a real dir, or ""
// when the entry is not an artifact of typ.
func realEntry(typ, dir, name string) (string, string) {
	if strings.HasPrefix(name, ".") {
		return "", ""
	}
	if typ == events.ArtifactSkill {
		doc := filepath.Join(dir, name, "SKILL.md")
		if _, err := os.Stat(doc); err != nil || !skills.ValidSlug(name) {
			return "", ""
		}
		return name, doc
	}
	slug, ok := strings.CutSuffix(name, ".md")
	if !ok || !skills.ValidSlug(slug) {
		return "", ""
	}
	return slug, filepath.Join(dir, name)
}

func readCapped(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	n, _ := f.Read(buf)
	return string(buf[:n])
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// adopt links an entry of an engine's real dir into the tenant's store and
// indexes it. The entry must lie in one of the engine's real dirs for the
// type; symlinks are resolved before the check, so a link cannot smuggle in
// a path from elsewhere.
func (a *api) adopt(ctx context.Context, t string, r events.AdoptRequest) (events.DetectedArtifact, error) {
	var zero events.DetectedArtifact
	if !r.Engine.Valid() {
		return zero, svc.Invalid("engine %q: unknown", r.Engine)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(r.Path))
	if err != nil || !filepath.IsAbs(r.Path) {
		return zero, svc.NotFound("%s: no such entry", r.Path)
	}
	allowed := false
	for _, dir := range a.realDirs(r.Type, r.Engine) {
		if d, err := filepath.EvalSymlinks(dir); err == nil && filepath.Dir(real) == d {
			allowed = true
		}
	}
	if !allowed {
		return zero, svc.Invalid("%s is not an entry of %s's %s directories", r.Path, r.Engine, r.Type)
	}
	slug, doc := realEntry(r.Type, filepath.Dir(real), filepath.Base(real))
	if r.Slug != "" {
		slug = r.Slug
	}
	if slug == "" || !skills.ValidSlug(slug) {
		return zero, svc.Invalid("%s: not a %s, or no valid slug", r.Path, r.Type)
	}
	src := readCapped(doc)
	switch r.Type {
	case events.ArtifactSkill:
		s, _, err := skills.Parse(slug, src)
		if err != nil {
			return zero, svc.Invalid("%v", err)
		}
		s.Source, s.Enabled = "adopted", true
		entry, _ := a.st.Docs.SkillDir(t, slug)
		if err := a.st.Docs.Link(entry, real); err != nil {
			return zero, err
		}
		if _, err := a.st.IndexSkill(ctx, t, s); err != nil {
			return zero, err
		}
		return events.DetectedArtifact{Slug: slug, Name: s.Name, Description: s.Description, Path: entry, Managed: true}, nil
	case events.ArtifactSubagent:
		fm, err := frontmatter.Parse(src)
		if err != nil || strings.TrimSpace(fm.Value("description")) == "" {
			return zero, svc.Invalid("%s: a subagent needs frontmatter with a description", r.Path)
		}
		entry, _ := a.st.Docs.SubagentFile(t, slug)
		if err := a.st.Docs.Link(entry, real); err != nil {
			return zero, err
		}
		sub := events.Subagent{Slug: slug, Name: orDefault(fm.Value("name"), slug), Description: fm.Value("description"),
			Model: fm.Value("model"), Enabled: true}
		if _, err := a.st.IndexSubagent(ctx, t, sub); err != nil {
			return zero, err
		}
		return events.DetectedArtifact{Slug: slug, Name: sub.Name, Description: sub.Description, Path: entry, Managed: true}, nil
	}
	return zero, svc.Invalid("type %q: adopt handles skill and subagent", r.Type)
}
