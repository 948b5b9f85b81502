package engine

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// CamelCase turns a snake_case field name of a CLI's tool input into the
// camelCase of the canonical inputs (file_path to filePath); other names
// are returned as they are.
func CamelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	var b strings.Builder
	b.WriteString(parts[0])
	for _, p := range parts[1:] {
		if p == "" {
			continue
		}
		r, size := utf8.DecodeRuneInString(p)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(p[size:])
	}
	return b.String()
}
