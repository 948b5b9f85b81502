package fakellm

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

// shutdownGrace is how long a stopping server waits for open streams before
// closing their connections.
const shutdownGrace = 2 * time.Second

// Main runs the server as a command, for `clopen fakellm`. Flags:
//
//	-addr 127.0.0.1:0   listen address (port 0 picks a free port)
//	-log FILE           append one JSON line per request to FILE
//	-slow-secs N        how long @@SLOW@@ stalls (default 30)
//	-retry-after-secs N the Retry-After of @@RATELIMIT@@ (default 1)
//	-error-delay-secs N how long @@SLOW_ERROR@@ waits before its 500 (default 3)
//
// It prints "fakellm listening on http://ADDR" to stdout once the listener is
// open, serves until ctx is done, and returns nil after a clean shutdown.
// Usage and flag errors go to stderr; -h returns flag.ErrHelp, wrapped.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakellm", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`; port 0 picks a free port")
	logPath := fs.String("log", "", "append one JSON line per request to `file`")
	slowSecs := fs.Float64("slow-secs", DefaultSlowFor.Seconds(), "how long @@SLOW@@ stalls, in `seconds`")
	retryAfter := fs.Int("retry-after-secs", int(DefaultRetryAfter.Seconds()), "the Retry-After of @@RATELIMIT@@, in whole `seconds`")
	errorDelay := fs.Float64("error-delay-secs", DefaultErrorDelay.Seconds(), "how long @@SLOW_ERROR@@ waits before its 500, in `seconds`")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("parse flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("parse flags: unexpected arguments %q", fs.Args())
	}
	if *slowSecs <= 0 {
		return fmt.Errorf("parse flags: -slow-secs must be positive, got %v", *slowSecs)
	}

	if *retryAfter <= 0 {
		return fmt.Errorf("parse flags: -retry-after-secs must be positive, got %d", *retryAfter)
	}
	if *errorDelay <= 0 {
		return fmt.Errorf("parse flags: -error-delay-secs must be positive, got %v", *errorDelay)
	}
	cfg := Config{SlowFor: time.Duration(*slowSecs * float64(time.Second)),
		RetryAfter: time.Duration(*retryAfter) * time.Second, ErrorDelay: time.Duration(*errorDelay * float64(time.Second))}
	if *logPath != "" {
		f, err := os.OpenFile(*logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("open request log: %w", err)
		}
		defer f.Close()
		cfg.Log = f
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", *addr, err)
	}
	fmt.Fprintf(stdout, "fakellm listening on http://%s\n", ln.Addr())
	return New(cfg).serve(ctx, ln)
}

// Start serves on addr (such as "127.0.0.1:0") in the background, for tests.
// It returns the base URL, like http://127.0.0.1:41234, and stop, which
// ends open streams, closes the listener and waits for the server to finish.
// stop may be called more than once.
func (s *Server) Start(addr string) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("listen %s: %w", addr, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.serve(ctx, ln); err != nil {
			s.logger.Error("fakellm: serve", "error", err)
		}
	}()
	stop = func() {
		cancel()
		<-done
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// serve answers on ln until ctx is done. Requests see ctx as their parent,
// so stopping also ends stalled streams at once.
func (s *Server) serve(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
