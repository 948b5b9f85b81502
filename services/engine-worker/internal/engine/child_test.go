package engine

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// lines collects a child's stdout through ChildSpec.Line.
type lines struct {
	q    *Queue[[]byte]
	read [][]byte // drained, not yet returned by next
}

func (l *lines) next(t *testing.T, c *Child) string {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		items, closed := l.q.Drain()
		l.read = append(l.read, items...)
		if len(l.read) > 0 {
			b := l.read[0]
			l.read = l.read[1:]
			return string(b)
		}
		if closed {
			t.Fatalf("stdout ended; stderr %q", c.Stderr())
		}
		select {
		case <-l.q.Notify():
		case <-deadline:
			t.Fatal("no line in 10 s")
		}
	}
}

func startSh(t *testing.T, script string, grace time.Duration) (*Child, *lines, *tapped) {
	t.Helper()
	l := &lines{q: NewQueue[[]byte]()}
	tp := &tapped{}
	c, err := StartChild(ChildSpec{Argv: []string{"sh", "-c", script}, Dir: t.TempDir(), Grace: grace,
		Tap: tp.tap, Line: func(b []byte) { l.q.Push(b) }, Closed: l.q.Close})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return c, l, tp
}

type tapped struct {
	mu   sync.Mutex
	sent []string
	got  []string
}

func (tp *tapped) tap(sent bool, b []byte) {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if sent {
		tp.sent = append(tp.sent, string(b))
	} else {
		tp.got = append(tp.got, string(b))
	}
}

func TestChildTalksJSONLines(t *testing.T) {
	c, l, tp := startSh(t, `printf '{"text":"a\342\200\250b"}\n'; while read -r line; do printf '%s\n' "$line"; done; echo bye >&2`, time.Second)
	// One line, although the string holds U+2028: lines end at LF only.
	if got := l.next(t, c); got != "{\"text\":\"a\u2028b\"}\n" {
		t.Fatalf("first line %q", got)
	}
	if err := c.Send(map[string]any{"type": "ping"}); err != nil {
		t.Fatal(err)
	}
	if got := l.next(t, c); got != "{\"type\":\"ping\"}\n" {
		t.Fatalf("echoed %q", got)
	}
	if err := c.Send(make(chan int)); err == nil {
		t.Fatal("a value JSON cannot encode was sent")
	}
	c.CloseInput()
	select {
	case <-c.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after stdin closed")
	}
	if !c.Exited() || c.Err() != nil || strings.TrimSpace(c.Stderr()) != "bye" {
		t.Fatalf("exited %v err %v stderr %q", c.Exited(), c.Err(), c.Stderr())
	}
	if _, closed := l.q.Drain(); !closed {
		t.Fatal("the queue is open after Done")
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.sent) != 1 || len(tp.got) != 2 {
		t.Fatalf("tap saw sent %q got %q", tp.sent, tp.got)
	}
}

// Stop takes the whole process group: a helper the CLI started in the
// background goes with it, and a CLI that ignores SIGTERM is killed after
// the grace period.
func TestChildStopKillsTheGroup(t *testing.T) {
	c, l, _ := startSh(t, `trap '' TERM; sleep 300 & echo $!; wait`, 300*time.Millisecond)
	pid, err := strconv.Atoi(strings.TrimSpace(l.next(t, c)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c.Stop(ctx)
	if !c.Exited() {
		t.Fatal("still running after Stop")
	}
	if took := time.Since(start); took < 250*time.Millisecond {
		t.Errorf("stopped in %v: SIGTERM was trapped, so only SIGKILL after the grace period ends it", took)
	}
	var ee *exec.ExitError
	if !errors.As(c.Err(), &ee) {
		t.Errorf("Err = %v, want the exit error of a killed process", c.Err())
	}
	// The helper is gone too (or a zombie of init's, which signal 0 still finds
	// only until it is reaped; give that a moment).
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("helper %d outlived Stop", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Retire lets a CLI that exits on EOF do so, and stops one that does not.
func TestChildRetire(t *testing.T) {
	polite, _, _ := startSh(t, `cat >/dev/null`, time.Second)
	start := time.Now()
	polite.Retire(5 * time.Second)
	if !polite.Exited() || polite.Err() != nil || time.Since(start) > 4*time.Second {
		t.Fatalf("exited %v err %v after %v", polite.Exited(), polite.Err(), time.Since(start))
	}
	stubborn, _, _ := startSh(t, `exec sleep 300`, time.Second)
	start = time.Now()
	stubborn.Retire(200 * time.Millisecond)
	if !stubborn.Exited() || time.Since(start) > 5*time.Second {
		t.Fatalf("exited %v after %v", stubborn.Exited(), time.Since(start))
	}
}

func TestChildStartErrors(t *testing.T) {
	if _, err := StartChild(ChildSpec{}); err == nil {
		t.Error("started nothing")
	}
	_, err := StartChild(ChildSpec{Argv: []string{"/nonexistent/agent"}})
	if err == nil || !strings.Contains(err.Error(), "start /nonexistent/agent") {
		t.Errorf("err = %v", err)
	}
}

func TestTailKeepsTheEnd(t *testing.T) {
	tl := &tail{max: 8}
	for _, s := range []string{"0123", "456789", "ab"} {
		if n, err := tl.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := tl.String(); got != "456789ab" {
		t.Fatalf("tail = %q", got)
	}
}

func TestLastLine(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes: the cut falls inside a rune
	for in, want := range map[string]string{
		"":                              "",
		"one\n":                         "one",
		"first\n  second  \n\n \n":      "second",
		"warning: x\nError: no login\n": "Error: no login",
	} {
		if got := LastLine(in); got != want {
			t.Errorf("LastLine(%q) = %q, want %q", in, got, want)
		}
	}
	if got := LastLine(long); !strings.HasSuffix(got, "…") || len(got) > 503 || !utf8.ValidString(got) {
		t.Errorf("LastLine of a long line = %d bytes, valid %v", len(got), utf8.ValidString(got))
	}
}
