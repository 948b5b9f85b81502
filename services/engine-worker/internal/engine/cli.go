package engine

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"clopen.dev/pkg/events"
)

// Defaults of the waits every adapter's Config has.
const (
	DefaultIdleTimeout    = 5 * time.Minute
	DefaultKillGrace      = 2 * time.Second
	DefaultInterruptGrace = 10 * time.Second
	DefaultCancelGrace    = 250 * time.Millisecond
)

// DefaultPath is an agent CLI's PATH when the worker has none.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin"

// CLI is what every adapter instance of an agent CLI has besides its
// protocol: its processes (warm ones included), the version of its
// executable, and its logger. An adapter's Engine embeds it for Version,
// Warm, Stats and Dispose.
type CLI[P Proc] struct {
	Procs *Procs[P]
	Log   *slog.Logger

	version VersionCommand
	mu      sync.Mutex
	known   string // the version, once read
}

// CLIConfig says how to make a CLI.
type CLIConfig[P Proc] struct {
	Engine      events.EngineType
	Key         Key
	Logger      *slog.Logger // nil discards
	IdleTimeout time.Duration
	Procs       ProcsOptions[P]
	Version     VersionCommand
}

// NewCLI returns the base of an adapter instance.
func NewCLI[P Proc](c CLIConfig[P]) CLI[P] {
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return CLI[P]{Procs: NewProcs(c.IdleTimeout, c.Procs), Log: log.With("engine", c.Engine, "tenant", c.Key.Tenant),
		version: c.Version}
}

// Version reads the CLI's version once and reports it.
func (c *CLI[P]) Version(ctx context.Context) (string, error) {
	c.mu.Lock()
	v := c.known
	c.mu.Unlock()
	if v != "" {
		return v, nil
	}
	v, err := c.version.Read(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.known = v
	c.mu.Unlock()
	return v, nil
}

// Warm reports how many warm processes the instance holds.
func (c *CLI[P]) Warm() int { return c.Procs.Warm() }

// Stats returns the instance's counters, for tests and metrics.
func (c *CLI[P]) Stats() Stats { return c.Procs.Stats() }

// Dispose stops every process of the instance, busy or warm, and waits
// for them (or ctx).
func (c *CLI[P]) Dispose(ctx context.Context) error { return c.Procs.Dispose(ctx) }

// VersionCommand is how an agent CLI tells its version: `Bin --version`,
// with PATH, a scratch HOME and Env.
type VersionCommand struct {
	Bin     string
	Env     []string
	Stderr  bool          // it prints the version on stderr
	Timeout time.Duration // 0 means 15 s
}

// versionRE finds a version number in --version output ("2.1.332 (Claude
// Code)", "codex-cli 0.171.0", "GitHub Copilot CLI 1.0.102.").
var versionRE = regexp.MustCompile(`\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?`)

// Read runs the command and returns the first version number it prints.
func (v VersionCommand) Read(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(v.Timeout, 15*time.Second))
	defer cancel()
	name := filepath.Base(v.Bin)
	cmd := exec.CommandContext(ctx, v.Bin, "--version")
	cmd.Env = append([]string{"PATH=" + cmp.Or(os.Getenv("PATH"), DefaultPath), "HOME=" + os.TempDir()}, v.Env...)
	run := cmd.Output
	if v.Stderr {
		run = cmd.CombinedOutput
	}
	b, err := run()
	if err != nil {
		return "", &Error{Kind: events.KindNotInstalled, Msg: fmt.Sprintf("%s --version: %v", name, err), Err: err}
	}
	found := strings.TrimSuffix(versionRE.FindString(string(b)), ".")
	if found == "" {
		return "", &Error{Kind: events.KindNotInstalled, Msg: name + " --version printed no version"}
	}
	return found, nil
}

// Credentials is the seam through which the worker gives an adapter's
// processes their credentials (C), asked once per process start for the
// instance's tenant and account. Today the worker answers from its own
// environment (each adapter's EnvCredentials); engine accounts kept by the
// artifacts service will answer here later. Implementations are safe for
// concurrent use; an error of kind events.KindNeedsAccount says nothing is
// configured.
type Credentials[C any] interface {
	Credential(ctx context.Context, tenant, account string) (C, error)
}

// PlaceholderKey is the API key used when only a base URL is configured
// (fakellm accepts any key; the CLIs insist on having one).
const PlaceholderKey = "sk-clopen-no-key"

// Fingerprint identifies a credential by its parts without revealing it,
// so a warm process started with other credentials is never reused.
func Fingerprint(parts ...string) string {
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:8])
}

// Getenv is get, or an empty environment when get is nil: what an
// adapter's EnvCredentials reads.
func Getenv(get func(string) string) func(string) string {
	if get == nil {
		return func(string) string { return "" }
	}
	return get
}

// LLMBaseURL is the address that wins over an engine's own for every
// engine: base (an EnvCredentials' BaseURL) when set, else
// CLOPEN_LLM_BASE_URL.
func LLMBaseURL(base string, get func(string) string) string {
	return cmp.Or(base, get("CLOPEN_LLM_BASE_URL"))
}

// ShuttingDown is the error of a turn that comes after Dispose.
func ShuttingDown(name string) error {
	return &Error{Kind: events.KindInternal, Msg: name + " is shutting down"}
}

// NoAccount is the error of credentials that find nothing configured.
func NoAccount(msg string) error { return &Error{Kind: events.KindNeedsAccount, Msg: msg} }

// StatusKind maps a provider's HTTP status to an error kind; ok is false
// for 0 and for a 4xx other than 401, 403, 404 and 429, which each
// adapter decides (by the message's words first, or not).
func StatusKind(status int) (kind events.ErrorKind, ok bool) {
	switch {
	case status == 401 || status == 403:
		return events.KindAuth, true
	case status == 429:
		return events.KindRateLimited, true
	case status == 404:
		return events.KindModelUnavailable, true
	case status >= 500:
		return events.KindProvider, true
	}
	return "", false
}

// ErrorRule classifies an error message that contains any of Words (and
// With as well, when set). Words are lower case.
type ErrorRule struct {
	Kind  events.ErrorKind
	With  string
	Words []string
}

// ErrorTable is an adapter's error rules; the first that matches decides.
type ErrorTable []ErrorRule

// Match returns the kind of the first rule msg matches.
func (t ErrorTable) Match(msg string) (events.ErrorKind, bool) {
	m := strings.ToLower(msg)
	for _, r := range t {
		if (r.With == "" || strings.Contains(m, r.With)) && ContainsAny(m, r.Words...) {
			return r.Kind, true
		}
	}
	return "", false
}

// Kind classifies a failure by the provider's HTTP status first (0 when
// unknown; any other 4xx is an invalid request), then by the table's
// words; the rest are the provider's failures.
func (t ErrorTable) Kind(status int, msg string) events.ErrorKind {
	if k, ok := StatusKind(status); ok {
		return k
	}
	if status >= 400 {
		return events.KindInvalidRequest
	}
	if k, ok := t.Match(msg); ok {
		return k
	}
	return events.KindProvider
}

// ExitCode is the exit status in a process's Wait error, -1 when there is
// none.
func ExitCode(waitErr error) int {
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// WithStderr appends the last line of a process's stderr to msg, which is
// where a CLI says why it failed.
func WithStderr(msg, stderr string) string {
	if last := LastLine(stderr); last != "" {
		return msg + ": " + last
	}
	return msg
}
