package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ErrNoJSON is wrapped by ExtractJSON when a text holds no JSON object or
// array; ErrTruncatedJSON when it ends inside one.
var (
	ErrNoJSON        = errors.New("no JSON object or array in the answer")
	ErrTruncatedJSON = errors.New("the answer ends inside a JSON value (truncated)")
)

// fence matches a fenced code block whose language, if any, is json.
var fence = regexp.MustCompile("(?s)```(?:json|JSON)?[ \t]*\r?\n(.*?)```")

// ExtractJSON finds the JSON document in a model's answer, tolerating what
// models wrap around it. Candidates, in order: each ```json fenced block;
// each balanced top-level object or array (brackets inside strings do not
// count); the slice from the first { to the last }; the whole text. Each
// candidate is tried as it is and then with raw control characters inside
// its strings escaped (models put literal newlines in JSON strings). The
// first one that parses wins, compacted. A text that opens an object or
// array and never closes it is ErrTruncatedJSON, one with nothing parseable
// ErrNoJSON; both errors show the answer's two ends.
func ExtractJSON(text string) (json.RawMessage, error) {
	var cands []string
	for _, m := range fence.FindAllStringSubmatch(text, -1) {
		cands = append(cands, m[1])
	}
	balanced, open := topLevel(text)
	cands = append(cands, balanced...)
	if i, j := strings.IndexByte(text, '{'), strings.LastIndexByte(text, '}'); i >= 0 && j > i {
		cands = append(cands, text[i:j+1])
	}
	cands = append(cands, text)
	for _, c := range cands {
		if doc, ok := parseDoc(c); ok {
			return doc, nil
		}
	}
	if open {
		return nil, fmt.Errorf("%w: %s", ErrTruncatedJSON, preview(text))
	}
	return nil, fmt.Errorf("%w: %s", ErrNoJSON, preview(text))
}

// parseDoc parses s as an object or array, repairing control characters
// inside strings on a second try.
func parseDoc(s string) (json.RawMessage, bool) {
	s = strings.TrimSpace(s)
	if s == "" || (s[0] != '{' && s[0] != '[') {
		return nil, false
	}
	for _, c := range []string{s, escapeControls(s)} {
		var b bytes.Buffer
		if json.Compact(&b, []byte(c)) == nil {
			return b.Bytes(), true
		}
	}
	return nil, false
}

// topLevel returns the balanced top-level objects and arrays of text, in
// order, and whether text ends inside one. Quotes only count inside a value,
// so an apostrophe in the prose around it cannot derail the scan.
func topLevel(text string) (out []string, open bool) {
	depth, start := 0, 0
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case depth == 0:
			if c == '{' || c == '[' {
				depth, start = 1, i
			}
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				out = append(out, text[start:i+1])
			}
		}
	}
	return out, depth > 0
}

// escapeControls escapes the raw control characters inside the strings of a
// JSON text, leaving everything else as it is.
func escapeControls(s string) string {
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString && !escaped && c < 0x20 {
			switch c {
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			default:
				fmt.Fprintf(&b, `\u%04x`, c)
			}
			continue
		}
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
		b.WriteByte(c)
	}
	return b.String()
}

// preview shows both ends of a long answer, where a truncation or a stray
// preamble shows.
func preview(s string) string {
	const n = 80
	if len(s) <= 2*n+20 {
		return fmt.Sprintf("%q", s)
	}
	head, tail := s[:n], s[len(s)-n:]
	for !utf8.ValidString(head) && len(head) > 0 {
		head = head[:len(head)-1]
	}
	for !utf8.ValidString(tail) && len(tail) > 0 {
		tail = tail[1:]
	}
	return fmt.Sprintf("%q … %q (%d bytes)", head, tail, len(s))
}
