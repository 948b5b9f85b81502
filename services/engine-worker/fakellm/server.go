package fakellm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	// DefaultSlowFor is how long @@SLOW@@ stalls when Config.SlowFor is zero.
	DefaultSlowFor = 30 * time.Second
	// DefaultKeepAlive is the keep-alive interval when Config.KeepAlive is zero.
	DefaultKeepAlive = 500 * time.Millisecond
	// DefaultRetryAfter is the Retry-After of @@RATELIMIT@@ when
	// Config.RetryAfter is zero.
	DefaultRetryAfter = time.Second
	// DefaultErrorDelay is how long @@SLOW_ERROR@@ waits before its 500
	// when Config.ErrorDelay is zero.
	DefaultErrorDelay = 3 * time.Second
)

// maxBody bounds a request body; agent requests with long histories stay far below it.
const maxBody = 64 << 20

// Config tunes a Server. The zero value is ready to use.
type Config struct {
	// SlowFor is how long @@SLOW@@ stalls after the first text delta;
	// zero means DefaultSlowFor.
	SlowFor time.Duration
	// KeepAlive is the interval of keep-alives during a stall; zero means
	// DefaultKeepAlive.
	KeepAlive time.Duration
	// RetryAfter is the Retry-After header of the @@RATELIMIT@@ answer, in
	// whole seconds (at least one); zero means DefaultRetryAfter.
	RetryAfter time.Duration
	// ErrorDelay is how long @@SLOW_ERROR@@ keeps the request waiting, with
	// nothing sent, before it answers 500; zero means DefaultErrorDelay.
	ErrorDelay time.Duration
	// Log, when set, receives one JSON line (a Request) per request. Writes
	// are serialized; the caller owns and closes it.
	Log io.Writer
	// LogPath, when set, names a file that gets the same lines, appended.
	LogPath string
	// Logger gets the server's own diagnostics (a client gone mid-stream, an
	// unwritable log); nil discards them.
	Logger *slog.Logger
}

// Server is the mock LLM. It implements http.Handler and is safe for
// concurrent use; each request is answered from its own content alone.
type Server struct {
	cfg    Config
	logger *slog.Logger

	mu       sync.Mutex
	requests []Request
}

// New returns a Server for cfg.
func New(cfg Config) *Server {
	if cfg.SlowFor <= 0 {
		cfg.SlowFor = DefaultSlowFor
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = DefaultKeepAlive
	}
	if cfg.RetryAfter <= 0 {
		cfg.RetryAfter = DefaultRetryAfter
	}
	if cfg.ErrorDelay <= 0 {
		cfg.ErrorDelay = DefaultErrorDelay
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, logger: logger}
}

// ServeHTTP routes a request to its wire format by the path's suffix.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	post := r.Method == http.MethodPost
	switch {
	case get && (p == "/" || p == "/health" || p == "/healthz"):
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "server": "fakellm"})
	case get && strings.HasSuffix(p, "/v1beta/models"):
		s.geminiModels(w, r)
	case get && strings.HasSuffix(p, "/models"):
		s.models(w, r)
	case post && strings.HasSuffix(p, "/messages/count_tokens"):
		s.anthropicCountTokens(w, r)
	case post && strings.HasSuffix(p, "/messages"):
		s.anthropic(w, r)
	case post && strings.HasSuffix(p, "/chat/completions"):
		s.chat(w, r)
	case post && strings.HasSuffix(p, "/responses"):
		s.responses(w, r)
	case post && strings.Contains(p, "/models/") && strings.Contains(p, ":"):
		s.gemini(w, r)
	default:
		s.notFound(w, r)
	}
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	s.record(Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Format: string(formatUnknown)})
	f := formatUnknown
	if strings.Contains(r.URL.Path, "/v1beta") {
		f = formatGemini
	}
	writeError(w, f, http.StatusNotFound, fmt.Sprintf("fakellm: no route for %s %s", r.Method, r.URL.Path))
}

// begin reads and parses a model request, records it, and answers the
// requests that end here: a bad body (400), @@RATELIMIT@@ (429),
// @@SLOW_ERROR@@ and @@ERROR@@ (500). When ok is false the response has
// been written.
func (s *Server) begin(w http.ResponseWriter, r *http.Request, f format, parse func([]byte) (turn, error)) (t turn, rep reply, ok bool) {
	sum := Request{Time: time.Now(), Method: r.Method, Path: r.URL.Path, Format: string(f), Key: KeyID(requestKey(r))}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		s.record(sum)
		status := http.StatusBadRequest
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, f, status, fmt.Sprintf("fakellm: read request body: %v", err))
		return turn{}, reply{}, false
	}
	t, err = parse(body)
	if err != nil {
		s.record(sum)
		writeError(w, f, http.StatusBadRequest, "fakellm: "+err.Error())
		return turn{}, reply{}, false
	}
	t.promptBytes = len(body)
	t.workDir = guessWorkDir(body)
	if schema, ok := promptSchema(t.user); ok && !t.jsonMode && t.forceTool == "" && t.result == nil {
		t.jsonMode, t.jsonSchema = true, schema
	}
	m := findMarkers(t.user)
	sum.Model, sum.Stream, sum.Marker = t.model, t.stream, m.String()
	sum.ToolResult, sum.Tools, sum.UserTurns, sum.Context = t.result != nil, t.toolNames(), t.turns, t.context
	s.record(sum)
	switch {
	case m.rateLimit:
		secs := max(int(math.Ceil(s.cfg.RetryAfter.Seconds())), 1)
		w.Header().Set("Retry-After", strconv.Itoa(secs))
		writeError(w, f, http.StatusTooManyRequests, fmt.Sprintf(rateLimitMessage, secs))
		return turn{}, reply{}, false
	case m.slowFail:
		timer := time.NewTimer(s.cfg.ErrorDelay)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-r.Context().Done():
			return turn{}, reply{}, false // the client gave up waiting
		}
		writeError(w, f, http.StatusInternalServerError, slowErrorMessage)
		return turn{}, reply{}, false
	case m.fail:
		writeError(w, f, http.StatusInternalServerError, forcedErrorMessage)
		return turn{}, reply{}, false
	}
	return t, decide(t, m), true
}

// pacer returns the stall for a reply; keepAlive may be nil for silence.
func (s *Server) pacer(rep reply, keepAlive func(context.Context) error) *pacer {
	return &pacer{pending: rep.slow, slowFor: s.cfg.SlowFor, tick: s.cfg.KeepAlive, keepAlive: keepAlive}
}

// streamEnded logs why a stream stopped early; a client hanging up is normal.
func (s *Server) streamEnded(r *http.Request, err error) {
	if err != nil {
		s.logger.DebugContext(r.Context(), "fakellm: stream ended early", "path", r.URL.Path, "error", err)
	}
}
