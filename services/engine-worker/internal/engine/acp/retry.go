package acp

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// retryPoll is how often a turn reads the agent's retry log.
const retryPoll = 500 * time.Millisecond

// giveUpGrace is how long an agent given up on has to end its prompt
// after session/cancel (one asleep between retries may not answer) before
// its process is stopped.
const giveUpGrace = 2 * time.Second

// retries follows the failed model calls an agent retries during a turn:
// the notifications it says them with, and the budget after which the
// turn gives up.
type retries struct {
	pattern string // the agent's retry log (a glob); "" if it keeps none
	path    string // the file it names, once there is one
	off     int64  // read up to here
	partial []byte // a line not yet ended
	status  int    // the last status retried
	last    string // the last retry line
	n       int    // retries seen
	budget  *time.Timer
}

// newRetries starts following the newest file matching pattern from its
// current end; a log that appears later is read from its start.
func newRetries(pattern string) *retries {
	r := &retries{pattern: pattern}
	if r.path = newest(pattern); r.path != "" {
		if fi, err := os.Stat(r.path); err == nil {
			r.off = fi.Size()
		}
	}
	return r
}

// newest is the most recently written file matching pattern; "" if none.
func newest(pattern string) string {
	if pattern == "" {
		return ""
	}
	files, _ := filepath.Glob(pattern)
	var path string
	var at time.Time
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && !fi.IsDir() && (path == "" || fi.ModTime().After(at)) {
			path, at = f, fi.ModTime()
		}
	}
	return path
}

// tick is when to read the log next; nil for an agent that keeps none.
func (r *retries) tick() <-chan time.Time {
	if r.pattern == "" {
		return nil
	}
	return time.After(retryPoll)
}

// expired is closed once the budget is spent; nil before the first retry.
func (r *retries) expired() <-chan time.Time {
	if r.budget == nil {
		return nil
	}
	return r.budget.C
}

// recovered stops the budget: the agent's retry worked.
func (r *retries) recovered() {
	if r.budget != nil {
		r.budget.Stop()
		r.budget = nil
	}
}

func (r *retries) stop() {
	if r.budget != nil {
		r.budget.Stop()
	}
}

// read returns the log's new whole lines.
func (r *retries) read() []string {
	if r.path == "" {
		if r.path = newest(r.pattern); r.path == "" {
			return nil
		}
	}
	f, err := os.Open(r.path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || fi.Size() < r.off {
		r.off = 0 // a new file
	}
	b, err := io.ReadAll(io.NewSectionReader(f, r.off, 1<<20))
	if err != nil || len(b) == 0 {
		return nil
	}
	r.off += int64(len(b))
	b = append(r.partial, b...)
	end := bytes.LastIndexByte(b, '\n')
	r.partial = append([]byte(nil), b[end+1:]...)
	var lines []string
	if end >= 0 {
		for _, l := range bytes.Split(b[:end], []byte{'\n'}) {
			lines = append(lines, string(l))
		}
	}
	return lines
}

// saw records a retry line and returns its notification; the first one
// starts the budget.
func (r *retries) saw(line, sessionID string, p *Profile, budget time.Duration) (events.Output, bool) {
	status, detail, ok := p.retryLine(line, sessionID)
	if !ok {
		return nil, false
	}
	r.status, r.last = status, line
	if detail != "" {
		r.last = detail
	}
	r.n++
	if r.budget == nil {
		r.budget = time.NewTimer(budget)
	}
	if status == 0 {
		return engine.FailedCallNotice(sessionID, p.Name, detail, r.n), true
	}
	return engine.RetryNotice(sessionID, p.Name, status, r.n), true
}

// retryLine reads one line of the agent's retry log: the profile's own
// reader, else a line naming a retry with its HTTP status.
func (p *Profile) retryLine(line, sessionID string) (status int, detail string, ok bool) {
	if p.RetryLine != nil {
		return p.RetryLine(line, sessionID)
	}
	status, ok = engine.RetryStatus(line)
	return status, "", ok
}
