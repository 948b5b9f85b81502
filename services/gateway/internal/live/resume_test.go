package live

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

func TestJoinWithoutCursorSnapshotThenLive(t *testing.T) {
	e := newWSEnv(t, Config{}, "member")
	ctx := context.Background()
	before := e.publish(t, "s1", 3, "old")
	c := e.dial(t)
	j, err := c.Join(ctx, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := frames(t, c, 1)[0]
	if snap.Type != events.WSFrameSnapshot || snap.Reload || snap.Cursor != before[2] || snap.Payload == nil || snap.Payload.PartialText != "so far" {
		t.Fatalf("first frame = %+v, want a snapshot at cursor %d without reload", snap, before[2])
	}
	if j.From != before[2]+1 {
		t.Errorf("join reply from = %d, want %d", j.From, before[2]+1)
	}
	live := e.publish(t, "s1", 2, "new")
	if got := cursors(t, frames(t, c, 2), "s1"); !eq(got, live) {
		t.Errorf("live cursors = %v, want %v", got, live)
	}
}

func TestResumeFromCursorReplaysExactlyThenLive(t *testing.T) {
	e := newWSEnv(t, Config{}, "member")
	ctx := context.Background()
	var s1 []uint64
	for range 5 { // interleave another session's events: the filter must skip them
		s1 = append(s1, e.publish(t, "s1", 2, "a")...)
		e.publish(t, "s2", 1, "b")
	}
	c := e.dial(t)
	if _, err := c.Join(ctx, "s1", ptr(s1[3])); err != nil {
		t.Fatal(err)
	}
	if got := cursors(t, frames(t, c, len(s1)-4), "s1"); !eq(got, s1[4:]) {
		t.Errorf("replayed cursors = %v, want %v", got, s1[4:])
	}
	live := e.publish(t, "s1", 3, "c")
	if got := cursors(t, frames(t, c, 3), "s1"); !eq(got, live) {
		t.Errorf("live cursors = %v, want %v", got, live)
	}
	noFrame(t, c, 100*time.Millisecond)
	if n := e.chats.snapshotCount(); n != 0 {
		t.Errorf("a fresh cursor took %d snapshots, want none", n)
	}
}

func TestReconnectGetsExactlyTheMissedFrames(t *testing.T) {
	e := newWSEnv(t, Config{}, "member")
	ctx := context.Background()
	c1 := e.dial(t)
	if _, err := c1.Join(ctx, "s1", nil); err != nil {
		t.Fatal(err)
	}
	frames(t, c1, 1) // the snapshot
	want := e.publish(t, "s1", 4, "x")
	if got := cursors(t, frames(t, c1, 4), "s1"); !eq(got, want) {
		t.Fatalf("first connection got %v, want %v", got, want)
	}
	_ = c1.Close()
	missed := e.publish(t, "s1", 5, "while away")
	c2 := e.dial(t)
	if _, err := c2.Join(ctx, "s1", ptr(want[3])); err != nil {
		t.Fatal(err)
	}
	if got := cursors(t, frames(t, c2, 5), "s1"); !eq(got, missed) {
		t.Errorf("after reconnect got %v, want exactly the missed %v", got, missed)
	}
	live := e.publish(t, "s1", 2, "back")
	if got := cursors(t, frames(t, c2, 2), "s1"); !eq(got, live) {
		t.Errorf("then live %v, want %v", got, live)
	}
}

func TestStaleCursorGetsSnapshotWithReload(t *testing.T) {
	e := newWSEnv(t, Config{}, "member")
	ctx := context.Background()
	seqs := e.publish(t, "s1", 10, "x")
	st, err := e.js.Stream(ctx, events.StreamChat)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSequence(seqs[5])); err != nil { // drops everything before seqs[5]
		t.Fatal(err)
	}
	tests := []struct {
		name string
		give uint64
	}{
		{"aged out", seqs[1]},
		{"beyond the stream's end", seqs[9] + 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := e.dial(t)
			if _, err := c.Join(ctx, "s1", ptr(tt.give)); err != nil {
				t.Fatal(err)
			}
			f := frames(t, c, 1)[0]
			if f.Type != events.WSFrameSnapshot || !f.Reload || f.Cursor < seqs[9] {
				t.Fatalf("frame = %+v, want a reload snapshot at %d or later", f, seqs[9])
			}
			live := e.publish(t, "s1", 1, "after")
			if got := cursors(t, frames(t, c, 1), "s1"); !eq(got, live) {
				t.Errorf("after the snapshot got %v, want %v", got, live)
			}
		})
	}
	// The oldest cursor still fully buffered resumes without a snapshot.
	c := e.dial(t)
	if _, err := c.Join(ctx, "s1", ptr(seqs[5]-1)); err != nil {
		t.Fatal(err)
	}
	if got := cursors(t, frames(t, c, 5), "s1"); !eq(got, seqs[5:]) {
		t.Errorf("edge cursor replayed %v, want %v", got, seqs[5:])
	}
}

func TestJoinLeavesThePreviousSession(t *testing.T) {
	e := newWSEnv(t, Config{}, "member")
	ctx := context.Background()
	c := e.dial(t)
	if _, err := c.Join(ctx, "s1", ptr(uint64(0))); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Join(ctx, "s2", ptr(uint64(0))); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "s1", 2, "old session")
	want := e.publish(t, "s2", 1, "new session")
	if got := cursors(t, frames(t, c, 1), "s2"); !eq(got, want) {
		t.Errorf("got %v, want only s2's %v", got, want)
	}
	noFrame(t, c, 100*time.Millisecond)
	if err := c.Leave(ctx, "s2"); err != nil {
		t.Fatal(err)
	}
	e.publish(t, "s2", 1, "after leave")
	noFrame(t, c, 100*time.Millisecond)
}
