package engines

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"
)

// InstalledVersion runs the install's version command and returns the
// first word it prints; ErrNotInstalled when there is no executable.
func (s Spec) InstalledVersion(ctx context.Context, enginesDir string) (string, error) {
	if s.External != nil {
		return "", ErrNotInstalled
	}
	return s.versionAt(ctx, s.Dir(enginesDir))
}

// versionAt reads the version of the install in dir.
func (s Spec) versionAt(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, filepath.FromSlash(s.Bin))
	if _, err := os.Stat(bin); err != nil {
		return "", ErrNotInstalled
	}
	return runVersion(ctx, bin, s.VersionArgs)
}

// runVersion runs bin's version command and returns the first version
// number it prints. It has until ctx's deadline (DefaultProbeTimeout when
// ctx has none); a command still going then fails with ErrTimedOut, which
// says nothing about the install.
func runVersion(ctx context.Context, bin string, args []string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultProbeTimeout)
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "DISABLE_AUTOUPDATER=1"}
	// A child that keeps the output open does not hold the probe past its end.
	cmd.WaitDelay = 5 * time.Second
	// Some CLIs print their version to stderr (pi), so both are read.
	out, err := cmd.CombinedOutput()
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "", fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), ErrTimedOut)
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	v := versionIn(string(out))
	if v == "" {
		return "", fmt.Errorf("%s printed no version", bin)
	}
	return v, nil
}

// versionIn is the first version number in out: "2.1.332 (Claude Code)",
// "codex-cli 0.171.0", "GitHub Copilot CLI 1.0.102.".
func versionIn(out string) string {
	return strings.TrimSuffix(versionRE.FindString(out), ".")
}

// versionRE is the first version number a version command prints
// ("2.1.332 (Claude Code)", "GitHub Copilot CLI 1.0.102.").
var versionRE = regexp.MustCompile(`\d+\.\d+(\.\d+)?([-+][0-9A-Za-z.-]+)?`)

// ErrNotInstalled says an engine has no install at its pinned version.
var ErrNotInstalled = errors.New("not installed")

// Install installs the pinned packages into the engine's versioned dir
// under enginesDir, streaming npm's output to out. It is idempotent: when
// the pinned version is already there it reports already=true and does
// nothing. npm works in a scratch dir renamed into place at the end, so an
// interrupted install never leaves a half one where workers look.
func (s Spec) Install(ctx context.Context, enginesDir, npmCache string, out io.Writer) (already bool, err error) {
	if v, err := s.InstalledVersion(ctx, enginesDir); err == nil && v == s.Version {
		return true, nil
	}
	if s.External != nil {
		return false, fmt.Errorf("install %s: Clopen cannot install it; see `clopen engines doctor`", s.Type)
	}
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		return false, fmt.Errorf("install %s: only linux/amd64 packages are pinned, not %s/%s", s.Type, runtime.GOOS, runtime.GOARCH)
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return false, fmt.Errorf("install %s: npm is needed: %w", s.Type, err)
	}
	dir := s.Dir(enginesDir)
	scratch := fmt.Sprintf("%s.partial-%d", dir, os.Getpid())
	if err := os.RemoveAll(scratch); err != nil {
		return false, err
	}
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return false, fmt.Errorf("install %s: %w", s.Type, err)
	}
	defer os.RemoveAll(scratch)
	args := []string{"install", "--prefix", scratch, "--no-audit", "--no-fund", "--save-exact", "--cache", npmCache}
	for _, p := range s.Packages {
		args = append(args, p.Name+"@"+p.Version)
	}
	fmt.Fprintf(out, "npm %s\n", strings.Join(args, " "))
	out = &lockedWriter{w: out} // npm's output and the progress lines
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.Stdout, cmd.Stderr, cmd.Dir = out, out, scratch
	stopProgress := s.reportProgress(out, scratch)
	err = cmd.Run()
	stopProgress()
	if err != nil {
		return false, fmt.Errorf("install %s: npm: %w", s.Type, err)
	}
	if v, err := s.versionAt(ctx, scratch); err != nil || v != s.Version {
		return false, fmt.Errorf("install %s: the installed executable reports %q (%v), want %s", s.Type, v, err, s.Version)
	}
	if err := os.RemoveAll(dir); err != nil {
		return false, err
	}
	if err := os.Rename(scratch, dir); err != nil {
		return false, fmt.Errorf("install %s: %w", s.Type, err)
	}
	return false, nil
}

// progressEvery is how often a running install says how far it has got:
// npm prints nothing while it downloads, and an engine is tens to hundreds
// of megabytes.
var progressEvery = 10 * time.Second

// reportProgress prints, every progressEvery until the returned function is
// called, how long the install has run and how much npm has put in dir.
// out is shared with npm's output, so it must be safe for concurrent use.
func (s Spec) reportProgress(out io.Writer, dir string) (stop func()) {
	start := time.Now()
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(out, "installing %s: %s in place after %s\n", s.Type, megabytes(treeSize(dir)), time.Since(start).Round(time.Second))
			}
		}
	}()
	return func() { close(done); <-finished }
}

// treeSize is the bytes of the regular files under dir; files that vanish
// while it walks (npm renames as it goes) are skipped.
func treeSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func megabytes(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// lockedWriter serialises writes from npm's output copier and the progress
// reporter.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
