package fakellm_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"clopen.dev/services/engine-worker/fakellm"
)

func TestMainServesUntilCancelled(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "log.jsonl")
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, outW := io.Pipe()
	errc := make(chan error, 1)
	go func() {
		errc <- fakellm.Main(ctx, []string{"-addr", "127.0.0.1:0", "-log", logPath, "-slow-secs", "0.5"}, outW, io.Discard)
		outW.Close()
	}()

	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("read listening line: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "fakellm listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("stdout line = %q, want fakellm listening on http://127.0.0.1:PORT", line)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }() // drains until Main closes the pipe

	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	start := time.Now()
	resp, err := (&http.Client{Transport: tr}).Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"@@SLOW@@"}]}`))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if took := time.Since(start); took < 400*time.Millisecond || took > 5*time.Second || !strings.HasSuffix(string(body), "data: [DONE]\n\n") {
		t.Errorf("slow stream took %v and ended %q, want about 0.5 s and [DONE]", took, body[max(0, len(body)-20):])
	}

	cancel()
	select {
	case err := <-errc:
		if err != nil {
			t.Errorf("Main = %v, want nil after cancel", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Main did not return after cancel")
	}
	if log, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(log), `"marker":"@@SLOW@@"`) {
		t.Errorf("request log = %q, %v; want the slow request", log, err)
	}
}

func TestMainFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		give []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "flag provided but not defined"},
		{"extra argument", []string{"serve"}, "unexpected arguments"},
		{"bad slow", []string{"-slow-secs", "0"}, "-slow-secs must be positive"},
		{"bad retry after", []string{"-retry-after-secs", "0"}, "-retry-after-secs must be positive"},
		{"bad error delay", []string{"-error-delay-secs", "-1"}, "-error-delay-secs must be positive"},
		{"bad address", []string{"-addr", "256.0.0.1:x"}, "listen 256.0.0.1:x"},
		{"bad log", []string{"-log", "/nonexistent/dir/log"}, "open request log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fakellm.Main(t.Context(), tt.give, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Main(%q) = %v, want an error containing %q", tt.give, err, tt.want)
			}
		})
	}
	if err := fakellm.Main(t.Context(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("Main(-h) = %v, want flag.ErrHelp", err)
	}
}

// stop ends a stalled stream at once instead of waiting out the stall.
func TestStartStop(t *testing.T) {
	srv := fakellm.New(fakellm.Config{SlowFor: time.Minute})
	url, stop, err := srv.Start("127.0.0.1:0")
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer stop()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post(url+"/v1/messages", "application/json",
		strings.NewReader(`{"stream":true,"messages":[{"role":"user","content":"@@SLOW@@"}]}`))
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	if _, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil {
		t.Fatalf("first line: %v", err)
	}
	start := time.Now()
	stop()
	if took := time.Since(start); took > time.Second {
		t.Errorf("stop took %v with a stream stalled, want under 1 s", took)
	}
	stop() // a second call is harmless
}
