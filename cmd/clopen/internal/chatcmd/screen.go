package chatcmd

import (
	"fmt"
	"io"
	"strings"
)

// screen writes the conversation, keeping track of whether the cursor is in
// the middle of a streamed line so other output starts on a fresh one.
type screen struct {
	w       io.Writer
	midLine bool
}

// stream writes streamed text as it arrives.
func (s *screen) stream(text string) {
	if text == "" {
		return
	}
	fmt.Fprint(s.w, text)
	s.midLine = !strings.HasSuffix(text, "\n")
}

// endLine ends a streamed line, if one is open.
func (s *screen) endLine() {
	if s.midLine {
		fmt.Fprintln(s.w)
		s.midLine = false
	}
}

// linef writes one line of its own.
func (s *screen) linef(format string, args ...any) {
	s.endLine()
	fmt.Fprintf(s.w, format+"\n", args...)
}

// promptf writes a prompt that input follows on the same line.
func (s *screen) promptf(format string, args ...any) {
	s.endLine()
	fmt.Fprintf(s.w, format, args...)
}

// clip shortens s to one line of at most n runes.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
