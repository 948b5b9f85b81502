package fakellm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// sseWriter writes server-sent events and flushes after each one. The first
// write error sticks: later writes do nothing and return it.
type sseWriter struct {
	w   http.ResponseWriter
	rc  *http.ResponseController
	err error
}

func startSSE(w http.ResponseWriter) *sseWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseWriter{w: w, rc: http.NewResponseController(w)}
	s.flush()
	return s
}

// event writes one event: an "event:" line when name is set, then v as JSON.
// It stops early when ctx is done, so a gone client ends the stream.
func (s *sseWriter) event(ctx context.Context, name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s event: %w", name, err)
	}
	return s.raw(ctx, name, string(data))
}

// raw writes one event whose data is already encoded, such as "[DONE]".
func (s *sseWriter) raw(ctx context.Context, name, data string) error {
	if s.err == nil {
		s.err = context.Cause(ctx)
	}
	if s.err != nil {
		return s.err
	}
	msg := "data: " + data + "\n\n"
	if name != "" {
		msg = "event: " + name + "\n" + msg
	}
	if _, err := s.w.Write([]byte(msg)); err != nil {
		s.err = fmt.Errorf("write event: %w", err)
		return s.err
	}
	s.flush()
	return s.err
}

// comment writes an SSE comment line, which clients skip; used as a keep-alive.
func (s *sseWriter) comment(ctx context.Context, text string) error {
	if s.err == nil {
		s.err = context.Cause(ctx)
	}
	if s.err != nil {
		return s.err
	}
	if _, err := s.w.Write([]byte(": " + text + "\n\n")); err != nil {
		s.err = fmt.Errorf("write comment: %w", err)
		return s.err
	}
	s.flush()
	return s.err
}

func (s *sseWriter) flush() {
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) && s.err == nil {
		s.err = fmt.Errorf("flush: %w", err)
	}
}

// pacer holds the @@SLOW@@ stall: after the first text delta of a slow reply
// the stream stalls for slowFor, calling keepAlive every tick (nil sends
// nothing), and gives up as soon as ctx is done.
type pacer struct {
	pending   bool
	slowFor   time.Duration
	tick      time.Duration
	keepAlive func(context.Context) error
}

func (p *pacer) afterTextDelta(ctx context.Context) error {
	if !p.pending {
		return nil
	}
	p.pending = false
	deadline := time.NewTimer(p.slowFor)
	defer deadline.Stop()
	ticker := time.NewTicker(p.tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-deadline.C:
			return nil
		case <-ticker.C:
			if p.keepAlive == nil {
				continue
			}
			if err := p.keepAlive(ctx); err != nil {
				return err
			}
		}
	}
}
