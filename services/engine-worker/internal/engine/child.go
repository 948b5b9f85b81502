package engine

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"clopen.dev/pkg/platform/sandbox"
)

// readBuffer is the stdout read size. Agent CLIs stream thousands of small
// lines, and one whose stdout pipe backs up stalls or exits mid-answer
// (engines.md: a byte-wise reader lost the end of a 2,000-delta Claude
// answer), so stdout is read in large chunks by a goroutine that never
// waits for the consumer.
const readBuffer = 1 << 20

// stderrTail is how much of a child's stderr is kept for error messages.
const stderrTail = 16 << 10

// ChildSpec says how to start a Child and where its output goes.
type ChildSpec struct {
	Argv  []string // the program and its arguments
	Env   []string
	Dir   string
	Grace time.Duration // between SIGTERM and SIGKILL of the group

	// Tap, when set, sees every line both ways (sent is true for stdin):
	// transcript recorders and debug logs.
	Tap func(sent bool, line []byte)
	// Line gets every stdout line, newline included, in order and from one
	// goroutine. It must not block: the adapters queue the line or hand it
	// to the caller waiting for it.
	Line func(line []byte)
	// Closed, when set, runs once the process is gone and its stdout is
	// drained, before Done is closed; Err is valid from then on.
	Closed func()
	// Confine, when set, starts the process in its sandbox.
	Confine *Confinement
}

// Child is an agent CLI run as a child process that speaks newline-delimited
// JSON on stdin and stdout. It runs in its own process group, which every
// stop signals as a whole: agents start helpers and re-spawn themselves.
// Lines end at LF only, since JSON strings may hold U+2028, which other line
// readers split on. Writes are serialized; a Child is safe for concurrent use.
type Child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	wmu    sync.Mutex
	stderr *tail
	tap    func(sent bool, line []byte)
	cancel context.CancelFunc // SIGTERM to the group; WaitDelay escalates
	done   chan struct{}      // closed once the process is gone and stdout is drained
	err    error              // Wait's error, valid after done
}

// StartChild starts s.Argv and begins reading its stdout.
func StartChild(s ChildSpec) (*Child, error) {
	if len(s.Argv) == 0 {
		return nil, fmt.Errorf("start child: no command")
	}
	argv := s.Argv
	var confined *sandbox.Command
	if s.Confine != nil {
		var err error
		if confined, err = s.Confine.Sandbox.Command(s.Confine.Spec, argv); err != nil {
			return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
		}
		defer confined.Close()
		argv = confined.Argv
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env, cmd.Dir = s.Env, s.Dir
	if confined != nil {
		cmd.ExtraFiles = confined.ExtraFiles
		cmd.Dir = "/" // the sandbox enters s.Dir as the tenant's uid
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return SignalGroup(cmd, syscall.SIGTERM) }
	cmd.WaitDelay = s.Grace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cancel()
		return nil, err
	}
	// An *os.File for stdout: Wait does not copy it, so a slow consumer
	// never makes Wait close the pipe under the reader.
	r, w, err := os.Pipe()
	if err != nil {
		cancel()
		return nil, err
	}
	c := &Child{cmd: cmd, stdin: stdin, stderr: &tail{max: stderrTail}, tap: s.Tap, cancel: cancel, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w, c.stderr
	if err := cmd.Start(); err != nil {
		cancel()
		r.Close()
		w.Close()
		return nil, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	w.Close()
	eof := make(chan struct{})
	go c.read(r, s.Line, eof)
	go c.wait(r, eof, s.Closed)
	return c, nil
}

func (c *Child) read(r io.Reader, line func([]byte), eof chan<- struct{}) {
	defer close(eof)
	br := bufio.NewReaderSize(r, readBuffer)
	for {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if c.tap != nil {
				c.tap(false, b)
			}
			if line != nil {
				line(b)
			}
		}
		if err != nil {
			return
		}
	}
}

// wait reaps the process, kills what is left of its group, and reports the
// end once stdout is drained (or, if an escaped child still holds the pipe,
// soon after).
func (c *Child) wait(r *os.File, eof <-chan struct{}, closed func()) {
	c.err = c.cmd.Wait()
	_ = SignalGroup(c.cmd, syscall.SIGKILL)
	select {
	case <-eof:
	case <-time.After(2 * time.Second):
	}
	r.Close()
	<-eof
	if closed != nil {
		closed()
	}
	c.cancel()
	close(c.done)
}

// Send writes v as one JSON line to stdin.
func (c *Child) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if c.tap != nil {
		c.tap(true, b)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.stdin.Write(append(b, '\n'))
	return err
}

// CloseInput ends stdin; most CLIs then finish and exit by themselves.
func (c *Child) CloseInput() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_ = c.stdin.Close()
}

// Done is closed once the process is gone and its stdout drained.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the process is gone.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Err is the process's exit error; valid once Done is closed.
func (c *Child) Err() error { return c.err }

// Stderr returns the last part of what the process wrote to stderr.
func (c *Child) Stderr() string { return c.stderr.String() }

// Stop ends the process: stdin closed, SIGTERM to the group, SIGKILL after
// the grace period. It returns once the process is gone or ctx ends.
func (c *Child) Stop(ctx context.Context) {
	c.CloseInput()
	c.cancel()
	select {
	case <-c.done:
	case <-ctx.Done():
	}
}

// Retire closes stdin and gives the CLI wait to exit by itself (it flushes
// its session files) before stopping it: some never exit on EOF.
func (c *Child) Retire(wait time.Duration) {
	c.CloseInput()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		c.Stop(context.Background())
	}
}

// tail keeps the last max bytes written to it.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// Write keeps the tail of b; it never fails.
func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// String returns what is kept.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// Queue is an unbounded FIFO: Push never blocks, so a child's reader never
// stalls the child. The turn in progress drains it whenever Notify fires.
type Queue[T any] struct {
	mu     sync.Mutex
	items  []T
	closed bool
	notify chan struct{} // has a token whenever items or closed changed
}

// NewQueue returns an empty, open queue.
func NewQueue[T any]() *Queue[T] { return &Queue[T]{notify: make(chan struct{}, 1)} }

// Push appends v.
func (q *Queue[T]) Push(v T) {
	q.mu.Lock()
	q.items = append(q.items, v)
	q.mu.Unlock()
	q.wake()
}

// Close marks the end: nothing more is pushed.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wake()
}

func (q *Queue[T]) wake() {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

// Notify has a token whenever items were pushed or the queue closed since
// the last Drain.
func (q *Queue[T]) Notify() <-chan struct{} { return q.notify }

// Drain takes every queued item; closed is true once the queue is closed
// and empty.
func (q *Queue[T]) Drain() (items []T, closed bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items, q.items = q.items, nil
	return items, q.closed && len(items) == 0
}
