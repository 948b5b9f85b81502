// Package skills holds what is particular to skills: reading and writing
// SKILL.md, the preambles that advertise skills and subagents, slash
// invocation (/slug args) and the import of legacy commands.
package skills

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"clopen.dev/pkg/events"
	"clopen.dev/services/artifacts/internal/frontmatter"
)

// ErrInvalid is wrapped by every validation error; its text is for users.
var ErrInvalid = errors.New("invalid skill")

var slugRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// ValidSlug reports whether s is a valid skill, subagent or profile slug:
// lower-case letters and digits in dash-separated words, at most 64 bytes.
func ValidSlug(s string) bool { return len(s) <= 64 && slugRE.MatchString(s) }

// Known SKILL.md keys.
const (
	keyName, keyDescription, keyLicense, keyCompatibility = "name", "description", "license", "compatibility"
	keyAllowedTools, keyMetadata, keyTriggers             = "allowed-tools", "metadata", "triggers"
	keyArgumentHint, keyUses                              = "argument-hint", "uses"
)

// Parse reads a SKILL.md for the folder slug and validates it.
func Parse(slug, src string) (events.Skill, *frontmatter.Doc, error) {
	doc, err := frontmatter.Parse(src)
	if err != nil {
		return events.Skill{}, nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	s := events.Skill{Slug: slug, Name: doc.Value(keyName), Description: doc.Value(keyDescription),
		License: doc.Value(keyLicense), Compatibility: doc.Value(keyCompatibility),
		AllowedTools: doc.Value(keyAllowedTools), ArgumentHint: doc.Value(keyArgumentHint), Body: doc.Body}
	if f, ok := doc.Get(keyMetadata); ok {
		if f.Kind != frontmatter.Map {
			return s, nil, fmt.Errorf("%w: metadata must be a map", ErrInvalid)
		}
		s.Metadata = map[string]string{}
		for _, kv := range f.Map {
			s.Metadata[kv.Key] = kv.Value
		}
	}
	s.Triggers = []string{events.SkillTriggerAuto}
	if f, ok := doc.Get(keyTriggers); ok {
		s.Triggers = commaList(f)
	}
	if f, ok := doc.Get(keyUses); ok {
		s.Uses = commaList(f)
	}
	if err := Validate(s); err != nil {
		return s, nil, err
	}
	return s, doc, nil
}

func commaList(f frontmatter.Field) []string {
	items := f.List
	if f.Kind == frontmatter.Scalar {
		items = strings.Split(f.Value, ",")
	}
	out := []string{}
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" && !slices.Contains(out, it) {
			out = append(out, it)
		}
	}
	return out
}

// Validate checks a skill's fields.
func Validate(s events.Skill) error {
	switch {
	case !ValidSlug(s.Slug):
		return fmt.Errorf("%w: slug %q: want lower-case words joined by -, at most 64 characters", ErrInvalid, s.Slug)
	case s.Name != s.Slug:
		return fmt.Errorf("%w: name %q must equal the folder name %q", ErrInvalid, s.Name, s.Slug)
	case strings.TrimSpace(s.Description) == "":
		return fmt.Errorf("%w: description is required", ErrInvalid)
	case len(s.Description) > 1024:
		return fmt.Errorf("%w: description is %d characters, at most 1024", ErrInvalid, len(s.Description))
	case len(s.Compatibility) > 500:
		return fmt.Errorf("%w: compatibility is %d characters, at most 500", ErrInvalid, len(s.Compatibility))
	case len(s.Triggers) == 0:
		return fmt.Errorf("%w: triggers: name at least one of auto, slash", ErrInvalid)
	}
	for field, v := range map[string]string{"name": s.Name, "description": s.Description, "license": s.License, "compatibility": s.Compatibility} {
		if strings.ContainsAny(v, "<>") {
			return fmt.Errorf("%w: %s may not contain angle brackets", ErrInvalid, field)
		}
	}
	for _, tr := range s.Triggers {
		if tr != events.SkillTriggerAuto && tr != events.SkillTriggerSlash {
			return fmt.Errorf("%w: trigger %q: want auto or slash", ErrInvalid, tr)
		}
	}
	for _, u := range s.Uses {
		if !ValidSlug(u) {
			return fmt.Errorf("%w: uses %q is not a skill slug", ErrInvalid, u)
		}
	}
	return nil
}

// Render writes s as a SKILL.md over doc (the existing document, or nil):
// known keys are set from s, every other key is kept verbatim.
func Render(doc *frontmatter.Doc, s events.Skill) string {
	if doc == nil {
		doc = &frontmatter.Doc{}
	}
	doc.HasFrontmatter = true
	doc.Set(keyName, s.Name)
	doc.Set(keyDescription, s.Description)
	optional := func(key, v string) {
		if v == "" {
			doc.Delete(key)
		} else {
			doc.Set(key, v)
		}
	}
	optional(keyLicense, s.License)
	optional(keyCompatibility, s.Compatibility)
	optional(keyAllowedTools, s.AllowedTools)
	if len(s.Metadata) == 0 {
		doc.Delete(keyMetadata)
	} else {
		keys := make([]string, 0, len(s.Metadata))
		for k := range s.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		kvs := make([]frontmatter.KV, 0, len(keys))
		for _, k := range keys {
			kvs = append(kvs, frontmatter.KV{Key: k, Value: s.Metadata[k]})
		}
		doc.SetMap(keyMetadata, kvs)
	}
	if slices.Equal(s.Triggers, []string{events.SkillTriggerAuto}) {
		if _, had := doc.Get(keyTriggers); !had {
			doc.Delete(keyTriggers)
		} else {
			doc.Set(keyTriggers, events.SkillTriggerAuto)
		}
	} else {
		doc.Set(keyTriggers, strings.Join(s.Triggers, ", "))
	}
	optional(keyArgumentHint, s.ArgumentHint)
	optional(keyUses, strings.Join(s.Uses, ", "))
	doc.Body = s.Body
	return doc.String()
}

// Has reports whether s has trigger tr.
func Has(s events.Skill, tr string) bool { return slices.Contains(s.Triggers, tr) }
