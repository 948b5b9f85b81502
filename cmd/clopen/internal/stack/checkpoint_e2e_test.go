package stack

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"clopen.dev/cmd/clopen/internal/admincmd"
	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
)

// TestCheckpoints walks a Claude Code chat back in time: two turns write
// a.txt then b.txt; the checkpoints list both turns with their snapshots; a
// fork from turn 1's last message runs on the files turn 1 left (a.txt, no
// b.txt) and on turn 1's conversation only; a restore moves HEAD back to
// turn 2, and the files with it.
func TestCheckpoints(t *testing.T) {
	setup, llm := engineSetup(t, events.EngineClaudeCode)
	h := start(t, Config{Dir: t.TempDir(), Engines: setup})
	h.waitEngines([]events.EngineType{events.EngineClaudeCode})
	tn := newTenant()
	var s events.Session
	h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project, Engine: events.EngineClaudeCode}, &s)
	feed := h.follow(tn.TenantID, s.ID, 0)
	turn := func(req events.StartTurnRequest) events.Run {
		t.Helper()
		var r events.StartTurnReply
		h.must(events.OpStart, req, &r)
		feed.waitFor(t, 3*time.Minute, finished(r.RunID))
		run := h.waitRunState(tn, r.RunID, events.RunCompleted)
		if run.Snapshot == nil || run.Snapshot.ID == "" {
			t.Fatalf("run %s left no snapshot", r.RunID)
		}
		return run
	}
	send := func(text string) events.StartTurnRequest {
		return events.StartTurnRequest{Caller: tn.Caller, SessionID: s.ID, Prompt: []events.Block{events.TextBlock{Text: text}}}
	}
	first := turn(send(shell("Remember APPLE.", "echo one > a.txt")))
	second := turn(send(shell("Now remember BANANA.", "echo two > b.txt")))
	if second.StartSnapshot != first.Snapshot.ID {
		t.Errorf("turn 2 started from snapshot %q, want turn 1's %q", second.StartSnapshot, first.Snapshot.ID)
	}

	var cps []events.Checkpoint
	h.must(events.OpCheckpoints, events.SessionRef{Caller: tn.Caller, SessionID: s.ID}, &cps)
	if len(cps) != 2 || cps[0].RunID != first.ID || cps[1].RunID != second.ID {
		t.Fatalf("checkpoints = %+v, want turn 1 (%s) then turn 2 (%s)", cps, first.ID, second.ID)
	}
	for i, want := range []struct{ snapshot, file, prompt string }{
		{first.Snapshot.ID, "a.txt", "Remember APPLE."}, {second.Snapshot.ID, "b.txt", "Now remember BANANA."},
	} {
		c := cps[i]
		if c.Snapshot == nil || c.Snapshot.ID != want.snapshot {
			t.Errorf("checkpoint %d: snapshot %+v, want %s", i, c.Snapshot, want.snapshot)
		} else if !slices.ContainsFunc(c.Snapshot.Changes, func(fc events.FileChange) bool { return fc.Path == want.file && fc.Kind == events.FileAdded }) {
			t.Errorf("checkpoint %d: changes %+v do not list %s added", i, c.Snapshot.Changes, want.file)
		}
		if !strings.HasPrefix(c.Prompt, want.prompt) || c.UserMessageID == "" || c.MessageID == "" || c.MessageID == c.UserMessageID {
			t.Errorf("checkpoint %d = %+v: want prompt %q and distinct user and last message ids", i, c, want.prompt)
		}
	}

	// Fork from turn 1: its files and its conversation, nothing of turn 2.
	fork := send(shell("Fork: list the files, CHERRY.", "ls"))
	fork.ParentMessageID = cps[0].MessageID
	forked := turn(fork)
	if forked.StartSnapshot != first.Snapshot.ID {
		t.Errorf("the fork started from snapshot %q, want turn 1's %q", forked.StartSnapshot, first.Snapshot.ID)
	}
	evs := h.runEventsOnBus(tn.TenantID, forked.ID)
	if !toolOutputHas(evs, "a.txt") || toolOutputHas(evs, "b.txt") {
		t.Errorf("the fork's `ls` should list a.txt and not b.txt; events: %+v", evs)
	}
	if !turnCarried(llm.Requests(), "CHERRY", "Remember APPLE.") {
		t.Error("no model request of the fork carried turn 1's prompt")
	}
	if turnCarried(llm.Requests(), "CHERRY", "Now remember BANANA.") {
		t.Error("a model request of the fork carried turn 2's prompt, which is not on the fork's branch")
	}
	var got events.Session
	h.must(events.OpSessionGet, events.SessionRef{Caller: tn.Caller, SessionID: s.ID}, &got)
	if got.HeadSnapshot != forked.Snapshot.ID {
		t.Errorf("after the fork, the session's head snapshot = %q, want the fork's %q", got.HeadSnapshot, forked.Snapshot.ID)
	}

	// Restore to turn 2: HEAD, and the files the next turn gets, go back.
	var restored events.Session
	h.must(events.OpSessionRestore, events.SessionRestore{Caller: tn.Caller, SessionID: s.ID, MessageID: cps[1].MessageID}, &restored)
	if restored.HeadMessageID != cps[1].MessageID || restored.HeadSnapshot != second.Snapshot.ID {
		t.Errorf("restored session: head %s snapshot %s, want %s and %s", restored.HeadMessageID, restored.HeadSnapshot,
			cps[1].MessageID, second.Snapshot.ID)
	}
	var again []events.Checkpoint
	h.must(events.OpCheckpoints, events.SessionRef{Caller: tn.Caller, SessionID: s.ID}, &again)
	if len(again) != 2 || again[1].RunID != second.ID {
		t.Errorf("after the restore the checkpoints are %+v, want turns 1 and 2", again)
	}
	next := turn(send(shell("Back on BANANA's branch.", "ls")))
	if next.StartSnapshot != second.Snapshot.ID || !toolOutputHas(h.runEventsOnBus(tn.TenantID, next.ID), "b.txt") {
		t.Errorf("the turn after the restore started from %q (want %q) or did not see b.txt", next.StartSnapshot, second.Snapshot.ID)
	}

	// A message that is not the session's, and another tenant's session.
	wantStatus := func(err error, status int, what string) {
		t.Helper()
		var apiErr *events.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != status {
			t.Errorf("%s: err = %v, want status %d", what, err, status)
		}
	}
	wantStatus(h.call(events.OpSessionRestore, events.SessionRestore{Caller: tn.Caller, SessionID: s.ID, MessageID: uuid.NewString()}, nil),
		http.StatusNotFound, "restore to an unknown message")
	other := newTenant()
	wantStatus(h.call(events.OpSessionRestore, events.SessionRestore{Caller: other.Caller, SessionID: s.ID, MessageID: cps[0].MessageID}, nil),
		http.StatusNotFound, "restore of another tenant's session")
	wantStatus(h.call(events.OpCheckpoints, events.SessionRef{Caller: other.Caller, SessionID: s.ID}, nil),
		http.StatusNotFound, "checkpoints of another tenant's session")
	badFork := send("fork from nowhere")
	badFork.ParentMessageID = uuid.NewString()
	wantStatus(h.call(events.OpStart, badFork, nil), http.StatusNotFound, "a fork from an unknown message")

	// Garbage collection: a deleted session's snapshots go; every
	// checkpoint of the live session stays restorable.
	var doomed events.Session
	h.must(events.OpSessionCreate, events.SessionCreate{Caller: tn.Caller, ProjectID: tn.project, Engine: events.EngineClaudeCode}, &doomed)
	dfeed := h.follow(tn.TenantID, doomed.ID, 0)
	var dr events.StartTurnReply
	h.must(events.OpStart, events.StartTurnRequest{Caller: tn.Caller, SessionID: doomed.ID,
		Prompt: []events.Block{events.TextBlock{Text: shell("Doomed.", "echo doomed > d.txt")}}}, &dr)
	dfeed.waitFor(t, 3*time.Minute, finished(dr.RunID))
	doomedRun := h.waitRunState(tn, dr.RunID, events.RunCompleted)
	h.must(events.OpSessionDelete, events.SessionRef{Caller: tn.Caller, SessionID: doomed.ID}, nil)
	store, err := snapshot.ObjectStore(t.Context(), h.js, events.BucketSnapshots, 1)
	if err != nil {
		t.Fatal(err)
	}
	later := func() time.Time { return time.Now().Add(48 * time.Hour) }
	st, err := admincmd.CollectSnapshots(t.Context(), h.st.DB, snapshot.GC{Store: store, Now: later})
	if err != nil || st.DeletedManifests != 1 || st.DeletedPacks < 1 {
		t.Fatalf("collection = %+v, %v; want the deleted session's one manifest and its pack", st, err)
	}
	snaps := &snapshot.Snapshots{Store: store, Tenant: tn.TenantID}
	if _, err := snaps.Load(t.Context(), doomedRun.Snapshot.ID); !errors.Is(err, snapshot.ErrNotFound) {
		t.Errorf("the deleted session's snapshot survived the collection: %v", err)
	}
	for _, id := range []string{first.Snapshot.ID, second.Snapshot.ID, forked.Snapshot.ID, next.Snapshot.ID} {
		m, err := snaps.Load(t.Context(), id)
		if err == nil {
			_, err = snaps.Restore(t.Context(), m, map[string]string{"workspace": t.TempDir()})
		}
		if err != nil {
			t.Errorf("checkpoint %s does not restore after the collection: %v", id, err)
		}
	}
}
