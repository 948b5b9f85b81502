package fakellm

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// keptRequests is how many summaries Server.Requests keeps; older ones are dropped.
const keptRequests = 1000

// Request summarises one request the Server received. It is what
// Server.Requests returns and what the request log holds, one JSON object per
// line.
type Request struct {
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"`
	Format     string    `json:"format"` // anthropic, chat, responses, gemini, models or unknown
	Model      string    `json:"model,omitempty"`
	Stream     bool      `json:"stream"`
	Marker     string    `json:"marker"`      // markers found in the last user turn, space separated
	ToolResult bool      `json:"tool_result"` // a tool result follows the last user turn
	Tools      []string  `json:"tools"`       // names of the tools offered
	// UserTurns holds the text of every user turn the request carries,
	// oldest first: what a resumed session replayed to the model.
	UserTurns []string `json:"user_turns,omitempty"`
	// Context is what the client put around the turns (the system prompt
	// and <system-reminder> blocks; Messages API requests only): where an
	// agent passes on its memory file, skills and subagents.
	Context []string `json:"context,omitempty"`
	// Key is KeyID of the credential the request carried (x-api-key,
	// x-goog-api-key or a bearer token), so tests can tell whose account
	// a call used without the log holding keys.
	Key string `json:"key,omitempty"`
}

// KeyID identifies a credential without revealing it: the first 12 hex
// digits of its SHA-256.
func KeyID(key string) string {
	if key == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:6])
}

// requestKey is the credential r carries.
func requestKey(r *http.Request) string {
	if k := cmp.Or(r.Header.Get("x-api-key"), r.Header.Get("x-goog-api-key")); k != "" {
		return k
	}
	if a := r.Header.Get("Authorization"); len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
		return a[7:]
	}
	return ""
}

// record keeps r for Requests and appends it to the request log. A log that
// cannot be written is reported to the logger and otherwise ignored: the log
// is a test aid, and the answer matters more.
func (s *Server) record(r Request) {
	if r.Tools == nil {
		r.Tools = []string{}
	}
	line, err := json.Marshal(r)
	if err != nil {
		return // a Request holds only plain values
	}
	line = append(line, '\n')

	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) == keptRequests {
		s.requests = append(s.requests[:0], s.requests[1:]...)
	}
	s.requests = append(s.requests, r)
	if s.cfg.Log != nil {
		if _, err := s.cfg.Log.Write(line); err != nil {
			s.logger.Warn("fakellm: write request log", "error", err)
		}
	}
	if s.cfg.LogPath != "" {
		if err := appendFile(s.cfg.LogPath, line); err != nil {
			s.logger.Warn("fakellm: write request log", "path", s.cfg.LogPath, "error", err)
		}
	}
}

// appendFile opens the file for each line, so that a test can read, move or
// truncate the log while the server runs.
func appendFile(path string, line []byte) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("append %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}

// Requests returns a copy of the summaries of the requests received so far,
// oldest first (at most the last 1,000). It is safe for concurrent use.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	for i, r := range s.requests {
		r.Tools = slices.Clone(r.Tools)
		r.UserTurns = slices.Clone(r.UserTurns)
		r.Context = slices.Clone(r.Context)
		out[i] = r
	}
	return out
}
