// Package resolve decides what is active for a run: the profile filter of
// each artifact type, and the layered permission merge. Pure functions; the
// callers load the data.
package resolve

import (
	"fmt"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
)

// Profile is a profile's references, by artifact type. A nil *Profile is
// "no profile".
type Profile struct {
	ID    string
	Items map[string][]string // type -> slugs
}

// NewProfile groups items by type.
func NewProfile(id string, items []events.ProfileItem) *Profile {
	p := &Profile{ID: id, Items: map[string][]string{}}
	for _, it := range items {
		p.Items[it.Type] = append(p.Items[it.Type], it.Ref)
	}
	return p
}

// Filter is the set of slugs of one type a profile admits; a nil Filter
// leaves the type unconstrained.
type Filter map[string]bool

// ArtifactFilter returns the profile's filter for typ: nil when there is no
// profile or the profile references no item of that type (a profile
// constrains only the types it names), else the set it references.
func ArtifactFilter(p *Profile, typ string) Filter {
	if p == nil || len(p.Items[typ]) == 0 {
		return nil
	}
	f := Filter{}
	for _, s := range p.Items[typ] {
		f[s] = true
	}
	return f
}

// Active reports whether an item is active under f: unconstrained, an
// enabled item is; constrained, exactly the referenced items are, even
// globally disabled ones.
func (f Filter) Active(slug string, enabled bool) bool {
	if f == nil {
		return enabled
	}
	return f[slug]
}

// MergePermissions merges layers from the least to the most specific
// (global, project, profile): deny is the union of every layer; allow is
// the most specific non-empty allowlist.
func MergePermissions(layers ...events.PermissionRules) events.PermissionRules {
	out := events.PermissionRules{Allow: []string{}, Deny: []string{}}
	for _, l := range layers {
		for _, d := range l.Deny {
			if !slices.Contains(out.Deny, d) {
				out.Deny = append(out.Deny, d)
			}
		}
		if len(l.Allow) > 0 {
			out.Allow = append([]string{}, l.Allow...)
		}
	}
	return out
}

// NormalizePatterns trims, validates and dedupes patterns, keeping order.
func NormalizePatterns(in []string) ([]string, error) {
	out := []string{}
	for _, p := range in {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if i := strings.IndexByte(p, '*'); i >= 0 && i != len(p)-1 {
			return nil, fmt.Errorf("pattern %q: a * may only end a pattern", p)
		}
		if strings.ContainsAny(p, " \t\n(") || len(p) > 200 {
			return nil, fmt.Errorf("pattern %q: want a tool name or a prefix ending in *", p)
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
