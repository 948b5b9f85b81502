package snapshot

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"slices"
	"time"
)

// Conflict is a path of a merged tree that both sides changed from the
// base, to different results. Ours and Theirs say what each side did:
// added, changed or deleted; or, where one side's file meets the other's
// directory, which side has the file and which the directory.
type Conflict struct {
	Path   string `json:"path"`
	Ours   string `json:"ours"`
	Theirs string `json:"theirs"`
}

// Merge merges tree three ways: the changes from base to ours are made to
// theirs. A path that only one side changed takes that side's entry; a
// path both sides changed the same way (content, mode, link target, or
// both deleted) takes that; a path both sides changed differently is a
// Conflict, and so is a file that one side puts where the other side keeps
// something below it. Any of the manifests may be nil, for no files.
//
// With no conflicts Merge stores a manifest holding just the merged tree,
// whose parent is theirs, and returns it. No file data is copied: the
// entries name the packs they already are in, which are the tenant's own.
// When the merge leaves theirs' tree as it is, Merge stores nothing and
// returns theirs itself (nil when theirs is nil). With conflicts it stores
// nothing and returns them, sorted by path.
func (s *Snapshots) Merge(ctx context.Context, base, ours, theirs *Manifest, tree string) (*Manifest, []Conflict, error) {
	if err := validTenant(s.Tenant); err != nil {
		return nil, nil, err
	}
	if !validRel(tree) {
		return nil, nil, fmt.Errorf("merge: invalid tree name %q", tree)
	}
	b, o, t := entriesOf(base, tree), entriesOf(ours, tree), entriesOf(theirs, tree)
	var merged []Entry
	var conflicts []Conflict
	for _, p := range unionPaths(b, o, t) {
		eb, inB := b[p]
		eo, inO := o[p]
		et, inT := t[p]
		switch {
		case sameEntry(eo, inO, eb, inB), sameEntry(eo, inO, et, inT): // ours left it, or theirs made it alike
			if inT {
				merged = append(merged, et)
			}
		case sameEntry(et, inT, eb, inB): // only ours changed it
			if inO {
				merged = append(merged, eo)
			}
		default:
			conflicts = append(conflicts, Conflict{Path: p, Ours: changeKind(inB, inO), Theirs: changeKind(inB, inT)})
		}
	}
	merged, clashes := dropFilledDirs(merged), leafClashes(merged, o, t)
	conflicts = append(conflicts, clashes...)
	if len(conflicts) > 0 {
		slices.SortFunc(conflicts, func(a, b Conflict) int { return cmp.Compare(a.Path, b.Path) })
		return nil, conflicts, nil
	}
	if merged == nil {
		merged = []Entry{}
	}
	if theirs != nil && slices.Equal(theirs.Trees[tree], merged) || theirs == nil && len(merged) == 0 {
		return theirs, nil, nil
	}
	m := &Manifest{Trees: map[string][]Entry{tree: merged}, Created: time.Now().UTC()}
	if theirs != nil {
		m.Parent = theirs.ID
	}
	if err := m.validate(); err != nil {
		return nil, nil, fmt.Errorf("merge: %w", err)
	}
	if _, err := s.putManifest(ctx, m); err != nil {
		return nil, nil, fmt.Errorf("merge: %w", err)
	}
	return m, nil, nil
}

// entriesOf returns m's tree by path; m may be nil.
func entriesOf(m *Manifest, tree string) map[string]Entry {
	out := map[string]Entry{}
	if m != nil {
		for _, e := range m.Trees[tree] {
			out[e.Path] = e
		}
	}
	return out
}

// unionPaths returns every path of the trees, sorted.
func unionPaths(trees ...map[string]Entry) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range trees {
		for p := range t {
			if !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	slices.Sort(out)
	return out
}

// sameEntry says two sides hold the same thing at a path: both nothing,
// or the same kind, mode and content. Where a content is stored does not
// matter.
func sameEntry(a Entry, inA bool, b Entry, inB bool) bool {
	if !inA || !inB {
		return inA == inB
	}
	return a.Mode == b.Mode && a.SHA == b.SHA && a.Size == b.Size && a.Link == b.Link
}

// changeKind says what a side did to a path the base had (inBase) or not.
func changeKind(inBase, inSide bool) string {
	switch {
	case !inBase:
		return "added"
	case !inSide:
		return "deleted"
	default:
		return "changed"
	}
}

// dropFilledDirs leaves out the empty-directory entries that the merge put
// something below: the directory is no longer empty. entries is sorted.
func dropFilledDirs(entries []Entry) []Entry {
	below := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			below[d] = true
		}
	}
	return slices.DeleteFunc(entries, func(e Entry) bool { return e.IsDir() && below[e.Path] })
}

// leafClashes finds the files and symlinks of entries with something
// below them: one side made a file where the other kept a directory. Each
// is a conflict at the file's path.
func leafClashes(entries []Entry, ours, theirs map[string]Entry) []Conflict {
	leaves := map[string]Entry{}
	for _, e := range entries {
		if !e.IsDir() {
			leaves[e.Path] = e
		}
	}
	var out []Conflict
	clashed := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.Path); d != "."; d = path.Dir(d) {
			if _, ok := leaves[d]; ok && !clashed[d] {
				clashed[d] = true
				out = append(out, Conflict{Path: d, Ours: sideKind(ours, d), Theirs: sideKind(theirs, d)})
			}
		}
	}
	return out
}

// sideKind describes, for a file/directory clash at p, what a side has
// there: the file ("file") or a directory holding something ("directory").
func sideKind(side map[string]Entry, p string) string {
	if e, ok := side[p]; ok && !e.IsDir() {
		return "file"
	}
	return "directory"
}
