// Package frontmatter reads and writes the YAML-ish frontmatter of
// SKILL.md and subagent documents: a "---" fenced block of top-level
// "key: value" lines followed by a markdown body.
//
// It understands what these documents use — plain, single- and
// double-quoted scalars, block scalars (| and >, folded to one line), flow
// ([a, b]) and block (- a) lists, one level of nested map, comments — and
// nothing more. Keys it is not asked to change are written back verbatim, so
// a document round-trips byte for byte apart from a stripped BOM and CRLF
// line ends.
package frontmatter

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Field is one top-level key. Exactly one of Value, List and Map describes it
// (Kind says which).
type Field struct {
	Key   string
	Kind  Kind
	Value string
	List  []string
	Map   []KV
	// raw is the verbatim source of the key, its continuation lines and the
	// comments and blank lines after it; empty once the field is changed.
	raw string
}

// KV is one entry of a nested map.
type KV struct{ Key, Value string }

// Kind says how a field's value is shaped.
type Kind int

// The field kinds.
const (
	Scalar Kind = iota
	List
	Map
)

// Doc is a parsed document. Fields keep their document order.
type Doc struct {
	Fields []Field
	Body   string
	// HasFrontmatter is false for a document without a "---" block; String
	// then writes one only if fields were added.
	HasFrontmatter bool
	lead           string // comments and blank lines before the first key
}

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("frontmatter syntax")

var keyLine = regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_.-]*)[ \t]*:(?:[ \t]+(.*)|[ \t]*)$`)

// Parse reads src. A leading BOM is dropped and CRLF line ends become LF.
func Parse(src string) (*Doc, error) {
	src = strings.TrimLeft(src, "\ufeff")
	for strings.Contains(src, "\r\n") { // "\r\r\n" needs two passes
		src = strings.ReplaceAll(src, "\r\n", "\n")
	}
	d := &Doc{}
	first, rest, _ := strings.Cut(src, "\n")
	if strings.TrimRight(first, " \t") != "---" {
		d.Body = src
		return d, nil
	}
	d.HasFrontmatter = true
	var lines []string
	closed := false
	for rest != "" || !closed {
		var line string
		var ok bool
		line, rest, ok = strings.Cut(rest, "\n")
		if t := strings.TrimRight(line, " \t"); t == "---" || t == "..." {
			closed = true
			break
		}
		lines = append(lines, line)
		if !ok {
			break
		}
	}
	if !closed {
		return nil, fmt.Errorf("%w: no closing --- line", ErrSyntax)
	}
	d.Body = rest
	if err := d.parseLines(lines); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *Doc) parseLines(lines []string) error {
	seen := map[string]bool{}
	for i := 0; i < len(lines); {
		line := lines[i]
		if isTrivia(line) {
			if len(d.Fields) == 0 {
				d.lead += line + "\n"
			} else {
				d.Fields[len(d.Fields)-1].raw += line + "\n"
			}
			i++
			continue
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			return fmt.Errorf("%w: line %d: want \"key: value\", got %q", ErrSyntax, i+2, line)
		}
		key := m[1]
		if seen[key] {
			return fmt.Errorf("%w: line %d: duplicate key %q", ErrSyntax, i+2, key)
		}
		seen[key] = true
		j := i + 1
		for j < len(lines) && (isIndented(lines[j]) || (strings.TrimSpace(lines[j]) == "" && moreIndented(lines[j+1:]))) {
			j++
		}
		f, err := parseValue(key, strings.TrimSpace(m[2]), lines[i+1:j])
		if err != nil {
			return fmt.Errorf("%w: line %d: %s: %v", ErrSyntax, i+2, key, err)
		}
		f.raw = strings.Join(lines[i:j], "\n") + "\n"
		d.Fields = append(d.Fields, f)
		i = j
	}
	return nil
}

func isTrivia(line string) bool {
	t := strings.TrimSpace(line)
	return t == "" || (strings.HasPrefix(t, "#") && !isIndented(line))
}

func isIndented(line string) bool {
	return strings.TrimSpace(line) != "" && (line[0] == ' ' || line[0] == '\t')
}

// moreIndented reports whether an indented line follows the blank lines that
// start rest: a blank line inside a block scalar belongs to it.
func moreIndented(rest []string) bool {
	for _, l := range rest {
		if strings.TrimSpace(l) != "" {
			return isIndented(l)
		}
	}
	return false
}

func parseValue(key, v string, cont []string) (Field, error) {
	f := Field{Key: key}
	switch {
	case isBlockIndicator(v):
		f.Value = fold(cont)
		return f, nil
	case strings.HasPrefix(v, "{"):
		kvs, err := flowMap(v + " " + fold(cont))
		f.Kind, f.Map = Map, kvs
		return f, err
	case strings.HasPrefix(v, "["):
		items, err := flowList(v + " " + fold(cont))
		f.Kind, f.List = List, items
		return f, err
	case v == "" && len(cont) > 0 && strings.HasPrefix(strings.TrimSpace(firstNonBlank(cont)), "-"):
		f.Kind = List
		for _, l := range cont {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			item, ok := strings.CutPrefix(t, "-")
			if !ok {
				return f, fmt.Errorf("list item %q does not start with -", t)
			}
			s, err := scalar(strings.TrimSpace(item))
			if err != nil {
				return f, err
			}
			f.List = append(f.List, s)
		}
		return f, nil
	case v == "" && len(cont) > 0:
		f.Kind = Map
		for _, l := range cont {
			t := strings.TrimSpace(l)
			if t == "" || strings.HasPrefix(t, "#") {
				continue
			}
			m := keyLine.FindStringSubmatch(t)
			if m == nil {
				return f, fmt.Errorf("nested line %q: want \"key: value\"", t)
			}
			s, err := scalar(strings.TrimSpace(m[2]))
			if err != nil {
				return f, err
			}
			f.Map = append(f.Map, KV{m[1], s})
		}
		return f, nil
	}
	if len(cont) > 0 { // a plain scalar continued on indented lines
		if strings.HasPrefix(v, `"`) || strings.HasPrefix(v, "'") {
			v = v + " " + fold(cont)
		} else {
			v = strings.TrimSpace(stripComment(v) + " " + fold(cont))
		}
	}
	s, err := scalar(v)
	f.Value = s
	return f, err
}

func firstNonBlank(lines []string) string {
	for _, l := range lines {
		if strings.TrimSpace(l) != "" {
			return l
		}
	}
	return ""
}

var blockIndicator = regexp.MustCompile(`^[|>][+-]?[1-9]?[+-]?(?:[ \t]+#.*)?$`)

func isBlockIndicator(v string) bool { return blockIndicator.MatchString(v) }

// fold joins the non-blank lines of a block into one line.
func fold(lines []string) string {
	parts := make([]string, 0, len(lines))
	for _, l := range lines {
		if t := strings.TrimSpace(l); t != "" {
			parts = append(parts, t)
		}
	}
	return strings.Join(parts, " ")
}

func flowList(v string) ([]string, error) {
	v = strings.TrimSpace(cutFlowComment(v))
	if !strings.HasPrefix(v, "[") || !strings.HasSuffix(v, "]") {
		return nil, fmt.Errorf("unterminated flow list %q", v)
	}
	inner := strings.TrimSpace(v[1 : len(v)-1])
	if inner == "" {
		return []string{}, nil
	}
	var out []string
	for _, part := range splitFlow(inner) {
		s, err := scalar(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// cutFlowComment drops a comment after the closing bracket of a flow
// collection.
func cutFlowComment(v string) string {
	var quote rune
	depth := 0
	for i, r := range v {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '"' || r == '\'':
			quote = r
		case r == '[' || r == '{':
			depth++
		case r == ']' || r == '}':
			depth--
			if depth == 0 {
				if rest := strings.TrimSpace(v[i+1:]); rest == "" || strings.HasPrefix(rest, "#") {
					return v[:i+1]
				}
				return v
			}
		}
	}
	return v
}

func flowMap(v string) ([]KV, error) {
	v = strings.TrimSpace(cutFlowComment(v))
	if !strings.HasPrefix(v, "{") || !strings.HasSuffix(v, "}") {
		return nil, fmt.Errorf("unterminated flow map %q", v)
	}
	inner := strings.TrimSpace(v[1 : len(v)-1])
	if inner == "" {
		return []KV{}, nil
	}
	var out []KV
	for _, part := range splitFlow(inner) {
		m := keyLine.FindStringSubmatch(strings.TrimSpace(part))
		if m == nil {
			return nil, fmt.Errorf("flow map entry %q: want \"key: value\"", part)
		}
		s, err := scalar(strings.TrimSpace(m[2]))
		if err != nil {
			return nil, err
		}
		out = append(out, KV{m[1], s})
	}
	return out, nil
}

// splitFlow splits on commas outside quotes.
func splitFlow(s string) []string {
	var parts []string
	var quote rune
	start := 0
	for i, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote == 0 && (r == '"' || r == '\''):
			quote = r
		case quote == 0 && r == ',':
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}

// scalar unquotes a one-line scalar.
func scalar(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, `"`):
		return doubleQuoted(v)
	case strings.HasPrefix(v, "'"):
		end := -1
		for i := 1; i < len(v); i++ {
			if v[i] == '\'' {
				if i+1 < len(v) && v[i+1] == '\'' {
					i++
					continue
				}
				end = i
				break
			}
		}
		if end < 0 || strings.TrimSpace(stripComment(" "+v[end+1:])) != "" {
			return "", fmt.Errorf("bad single-quoted scalar %q", v)
		}
		return strings.ReplaceAll(v[1:end], "''", "'"), nil
	}
	return strings.TrimSpace(stripComment(v)), nil
}

func doubleQuoted(v string) (string, error) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch c {
		case '"':
			if strings.TrimSpace(stripComment(" "+v[i+1:])) != "" {
				return "", fmt.Errorf("text after closing quote in %q", v)
			}
			return b.String(), nil
		case '\\':
			i++
			if i >= len(v) {
				return "", fmt.Errorf("dangling escape in %q", v)
			}
			switch v[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case '"', '\\', '/':
				b.WriteByte(v[i])
			case '0':
				b.WriteByte(0)
			default:
				return "", fmt.Errorf("unknown escape \\%c in %q", v[i], v)
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", fmt.Errorf("unterminated double-quoted scalar %q", v)
}

// stripComment drops a " #" comment from a plain scalar.
func stripComment(v string) string {
	if i := strings.Index(v, " #"); i >= 0 {
		return v[:i]
	}
	if i := strings.Index(v, "\t#"); i >= 0 {
		return v[:i]
	}
	return v
}
