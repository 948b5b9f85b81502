package stack

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/snapshot"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// TestApplySessionsToTheProjectBase runs two Claude Code sessions of one
// project at once, both writing notes.txt: each sees only its own, the
// first applied becomes the project's base (and what a new session starts
// from), the second is refused as a conflict naming notes.txt. Sessions
// that changed different files both apply; another tenant gets 404, a
// plain member 403, and a session with a turn running 409.
func TestApplySessionsToTheProjectBase(t *testing.T) {
	setup, _ := engineSetup(t, events.EngineClaudeCode)
	h := start(t, Config{Dir: t.TempDir(), Engines: setup})
	h.waitEngine(events.EngineClaudeCode, engines.ClaudeCodeVersion)
	ctx := t.Context()
	a := h.account("apply")
	me, err := a.c.Me(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tenant := me.Tenant.ID
	store, err := snapshot.ObjectStore(ctx, h.js, events.BucketSnapshots, 1)
	if err != nil {
		t.Fatal(err)
	}
	snaps := &snapshot.Snapshots{Store: store, Tenant: tenant}

	newSession := func() events.Session {
		t.Helper()
		s, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Engine: events.EngineClaudeCode, Model: "claude-opus-5-5"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	send := func(s events.Session, command string) string {
		t.Helper()
		r, err := a.c.SendMessage(ctx, s.ID, api.SendMessage{Text: shell("Run it.", command)})
		if err != nil {
			t.Fatal(err)
		}
		return r.RunID
	}
	wait := func(run string) events.Run {
		t.Helper()
		var r events.Run
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			if r, err = a.c.Run(ctx, run); err == nil && r.State.Terminal() {
				break
			}
		}
		if r.State != events.RunCompleted {
			t.Fatalf("run %s: %s (%s), want completed", run, r.State, r.Error)
		}
		return r
	}
	printed := func(run, text string) bool { return toolOutputHas(h.runEventsOnBus(tenant, run), text) }
	baseFile := func(id, file string) string {
		t.Helper()
		m, err := snaps.Load(ctx, id)
		if err != nil {
			t.Fatalf("load base %s: %v", id, err)
		}
		rc, _, err := snaps.Open(ctx, m, "workspace", file)
		if err != nil {
			t.Fatalf("%s in base %s: %v", file, id, err)
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	project := func() api.Project {
		t.Helper()
		p, err := a.c.Project(ctx, a.project.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	conflict := func(what string, err error, want string) {
		t.Helper()
		var ae *events.APIError
		if !errors.As(err, &ae) || ae.Status != http.StatusConflict || !strings.Contains(ae.Message, want) {
			t.Errorf("%s: %v, want 409 saying %q", what, err, want)
		}
	}

	// Two sessions write notes.txt at once, each reading it back after the
	// other has written its own.
	sa, sb := newSession(), newSession()
	ra := send(sa, "printf 'from A\\n' > notes.txt && sleep 2 && cat notes.txt")
	rb := send(sb, "printf 'from B\\n' > notes.txt && sleep 2 && cat notes.txt")
	runA, runB := wait(ra), wait(rb)
	if runA.ClaimedAt == nil || runB.ClaimedAt == nil || !runA.ClaimedAt.Before(*runB.EndedAt) || !runB.ClaimedAt.Before(*runA.EndedAt) {
		t.Errorf("the turns did not run at once: A %v..%v, B %v..%v", runA.ClaimedAt, runA.EndedAt, runB.ClaimedAt, runB.EndedAt)
	}
	if !printed(ra, "from A") || printed(ra, "from B") || !printed(rb, "from B") || printed(rb, "from A") {
		t.Errorf("a turn saw the other session's notes.txt")
	}
	ra2, rb2 := send(sa, "cat notes.txt"), send(sb, "cat notes.txt")
	wait(ra2)
	wait(rb2)
	if !printed(ra2, "from A") || printed(ra2, "from B") || !printed(rb2, "from B") || printed(rb2, "from A") {
		t.Errorf("a follow-up turn saw the other session's notes.txt")
	}

	// Another tenant cannot apply the session; a turn running refuses it.
	other := h.account("apply-other")
	var ae *events.APIError
	if _, err := other.c.ApplySession(ctx, sa.ID); !errors.As(err, &ae) || ae.Status != http.StatusNotFound {
		t.Errorf("apply as another tenant: %v, want 404", err)
	}
	// A plain member of the project may not change its base.
	u, err := gateway.CreateUser(ctx, h.st.DB, "apply", api.CreateUser{Email: "member@apply", Name: "Member"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.c.AddMember(ctx, a.project.ID, api.AddMember{UserID: u.ID}); err != nil {
		t.Fatal(err)
	}
	key, err := gateway.CreateKey(ctx, h.st.DB, "apply", "member@apply", "test")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.New(h.st.URL, key.Key).ApplySession(ctx, sa.ID); !errors.As(err, &ae) || ae.Status != http.StatusForbidden {
		t.Errorf("apply as a plain member: %v, want 403", err)
	}
	if p := project(); p.BaseSnapshot != "" {
		t.Fatalf("the project has base %s before any apply", p.BaseSnapshot)
	}

	// A is applied: the base is its files.
	applied, err := a.c.ApplySession(ctx, sa.ID)
	if err != nil {
		t.Fatalf("apply A: %v", err)
	}
	if !slices.ContainsFunc(applied.Changes, func(c events.FileChange) bool {
		return c.Path == "notes.txt" && c.Kind == events.FileAdded && c.LinesAdded == 1
	}) || applied.BaseSnapshot == "" {
		t.Errorf("apply A = %+v, want a base with notes.txt added (one line)", applied)
	}
	baseA := project().BaseSnapshot
	if baseA != applied.BaseSnapshot {
		t.Errorf("project base = %q, the apply said %q", baseA, applied.BaseSnapshot)
	}
	if got := baseFile(baseA, "notes.txt"); got != "from A\n" {
		t.Errorf("notes.txt in the base = %q, want A's", got)
	}

	// B changed notes.txt too: refused, the base stays A's.
	_, err = a.c.ApplySession(ctx, sb.ID)
	conflict("apply B", err, "notes.txt")
	if p := project(); p.BaseSnapshot != baseA {
		t.Errorf("a refused apply moved the base from %s to %s", baseA, p.BaseSnapshot)
	}

	// New sessions start from A's files; two of them add different files
	// and both apply.
	sc, sd := newSession(), newSession()
	if sc.BaseSnapshot != baseA {
		t.Errorf("a new session's base = %q, want the project's %q", sc.BaseSnapshot, baseA)
	}
	rc := send(sc, "cat notes.txt && printf 'c\\n' > c.txt")
	rd := send(sd, "printf 'd1\\nd2\\n' > d.txt")
	wait(rc)
	wait(rd)
	if !printed(rc, "from A") {
		t.Errorf("a session started after the apply did not see A's notes.txt")
	}
	if _, err := a.c.ApplySession(ctx, sc.ID); err != nil {
		t.Fatalf("apply C: %v", err)
	}
	appliedD, err := a.c.ApplySession(ctx, sd.ID)
	if err != nil {
		t.Fatalf("apply D, which changed other files than C: %v", err)
	}
	if len(appliedD.Changes) != 1 || appliedD.Changes[0] != (events.FileChange{Path: "d.txt", Kind: events.FileAdded, LinesAdded: 2}) {
		t.Errorf("apply D changed %+v, want only d.txt added with 2 lines", appliedD.Changes)
	}
	final := project().BaseSnapshot
	for file, want := range map[string]string{"notes.txt": "from A\n", "c.txt": "c\n", "d.txt": "d1\nd2\n"} {
		if got := baseFile(final, file); got != want {
			t.Errorf("%s in the merged base = %q, want %q", file, got, want)
		}
	}

	// Applying C again changes nothing.
	again, err := a.c.ApplySession(ctx, sc.ID)
	if err != nil || len(again.Changes) != 0 || again.BaseSnapshot != final {
		t.Errorf("apply C again = %+v, %v; want no changes and base %s", again, err, final)
	}
	if p := project(); p.BaseSnapshot != final {
		t.Errorf("an apply without changes moved the base to %s", p.BaseSnapshot)
	}

	// A session whose turn is running (parked on a question) is refused.
	se, err := a.c.CreateSession(ctx, a.project.ID, api.CreateSession{Model: "scripted/ask"})
	if err != nil {
		t.Fatal(err)
	}
	re, err := a.c.SendMessage(ctx, se.ID, api.SendMessage{Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s, err := a.c.Session(ctx, se.ID); err == nil && s.ActiveRunID == re.RunID {
			break
		}
	}
	_, err = a.c.ApplySession(ctx, se.ID)
	conflict("apply with a turn running", err, "wait for the turn to end")
	cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = a.c.Cancel(cctx, se.ID, re.RunID)
}
