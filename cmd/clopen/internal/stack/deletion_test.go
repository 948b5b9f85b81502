package stack

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// TestDeleteWhileStreamingStallsNoOne deletes sessions of one tenant in the
// middle of their runs while sessions of two tenants stream: every deletion succeeds,
// the other runs complete with every event stored, a new send is accepted
// and completes, streammgr stays ready, and nothing of a deleted session is
// left in streammgr's tables or on the bus.
func TestDeleteWhileStreamingStallsNoOne(t *testing.T) {
	h := start(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	accounts := []account{h.account("del-a"), h.account("del-b")}
	type turn struct {
		acc     account
		session string
		run     string
	}
	var victims, others []turn
	for i := range 10 {
		acc := accounts[i%2]
		model := "scripted/slow?delay=5ms"
		if i%2 == 0 {
			model = "scripted/slow?delay=20ms" // long enough to be deleted mid-stream
		}
		s, err := acc.c.CreateSession(ctx, acc.project.ID, api.CreateSession{Model: model})
		if err != nil {
			t.Fatal(err)
		}
		r, err := acc.c.SendMessage(ctx, s.ID, api.SendMessage{Text: fmt.Sprint("turn ", i)})
		if err != nil {
			t.Fatal(err)
		}
		tr := turn{acc: acc, session: s.ID, run: r.RunID}
		if i%2 == 0 && i < 8 {
			victims = append(victims, tr)
		} else {
			others = append(others, tr)
		}
	}
	deleted := newGone()
	for _, v := range victims {
		waitStreaming(ctx, t, v.acc.c, v.run)
		deleted.add(h, ctx, v.session, v.run)
	}
	var wg sync.WaitGroup
	for _, v := range victims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := v.acc.c.DeleteSession(ctx, v.session); err != nil {
				t.Errorf("delete session %s while it streams: %v", v.session, err)
			}
		}()
	}
	wg.Wait()
	for _, o := range others {
		waitRunEnded(ctx, t, o.acc.c, o.run, events.RunCompleted)
		h.checkStoredExactlyOnce(ctx, o.acc.c, o.run)
	}
	// A new turn is accepted at once and completes.
	acc := accounts[1]
	s, err := acc.c.CreateSession(ctx, acc.project.ID, api.CreateSession{Model: "scripted/hello"})
	if err != nil {
		t.Fatal(err)
	}
	sctx, scancel := context.WithTimeout(ctx, 15*time.Second)
	r, err := acc.c.SendMessage(sctx, s.ID, api.SendMessage{Text: "still there?"})
	scancel()
	if err != nil {
		t.Fatalf("a send after the deletions: %v", err)
	}
	waitRunEnded(ctx, t, acc.c, r.RunID, events.RunCompleted)
	if ok, results := h.st.Health.Run(ctx); !ok {
		t.Errorf("not ready after the deletions: %+v", results)
	}
	h.waitNothingLeft(ctx, deleted)
}

// waitStreaming waits until a run is running and has stored a few events.
func waitStreaming(ctx context.Context, t *testing.T, c *client.Client, run string) {
	t.Helper()
	for {
		r, err := c.Run(ctx, run)
		if err == nil && r.State == events.RunRunning {
			if evs, err := c.RunEvents(ctx, run, 0, 0, 10); err == nil && len(evs) >= 5 {
				return
			}
		}
		if r.State.Terminal() {
			t.Fatalf("run %s ended (%s) before it could be caught streaming", run, r.State)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s never streamed: %s (%v)", run, r.State, err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitRunEnded waits until a run's committed state is terminal and wants it
// to be want.
func waitRunEnded(ctx context.Context, t *testing.T, c *client.Client, run string, want events.RunStateName) events.Run {
	t.Helper()
	for {
		r, err := c.Run(ctx, run)
		if err == nil && r.State.Terminal() {
			if r.State != want {
				t.Errorf("run %s ended %s, want %s", run, r.State, want)
			}
			return r
		}
		select {
		case <-ctx.Done():
			t.Fatalf("run %s did not end: state %q (%v)", run, r.State, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// checkStoredExactlyOnce compares a run's stored events with what its worker
// published on EVENTS: the same events in the same order, each once, seqs
// dense from 1.
func (h *harness) checkStoredExactlyOnce(ctx context.Context, c *client.Client, run string) {
	h.t.Helper()
	r, err := c.Run(ctx, run)
	if err != nil {
		h.t.Fatal(err)
	}
	stored, err := c.RunEvents(ctx, run, 0, 0, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	published := h.runEventsOnBus(h.tenantOfRun(ctx, run), run)
	if len(stored) != len(published)+1 { // + the user message at epoch 0
		h.t.Errorf("run %s (%s): stored %d events, published %d (+1 user message)", run, r.State, len(stored), len(published))
		return
	}
	for i, env := range published {
		ev := stored[i+1]
		if ev.Epoch != env.Epoch || ev.Seq != env.Seq || ev.Seq != uint64(i+1) || ev.Type != env.Output.OutputType() {
			h.t.Errorf("run %s: stored event %d = %d/%d %s, published %d/%d %s", run, i, ev.Epoch, ev.Seq, ev.Type,
				env.Epoch, env.Seq, env.Output.OutputType())
			return
		}
	}
}

// tenantOfRun reads a run's tenant from streammgr's table (a REST client
// does not see tenant ids; the bus subjects carry them).
func (h *harness) tenantOfRun(ctx context.Context, run string) string {
	h.t.Helper()
	var tenant string
	if err := h.st.DB.QueryRow(ctx, `SELECT tenant_id::text FROM streammgr.runs WHERE id = $1`, run).Scan(&tenant); err != nil {
		h.t.Fatalf("tenant of run %s: %v", run, err)
	}
	return tenant
}

// gone names deleted sessions and runs, each with its tenant (the bus
// subjects carry tenant ids; a REST client does not see them, so they are
// read before the deletion).
type gone struct {
	mu       sync.Mutex
	sessions map[string]string
	runs     map[string]string
}

func newGone() *gone { return &gone{sessions: map[string]string{}, runs: map[string]string{}} }

// add records a session and its runs, before they are deleted.
func (g *gone) add(h *harness, ctx context.Context, session string, runs ...string) {
	h.t.Helper()
	var tenant string
	if err := h.st.DB.QueryRow(ctx, `SELECT tenant_id::text FROM streammgr.chat_sessions WHERE id = $1`, session).Scan(&tenant); err != nil {
		h.t.Errorf("tenant of session %s: %v", session, err)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sessions[session] = tenant
	for _, r := range runs {
		g.runs[r] = tenant
	}
}

// leftovers counts, in every streammgr table, the rows that belong to the
// deleted sessions or runs (by a session_id or run_id column, and
// chat_sessions by id), and the bus messages left on their CHAT and EVENTS
// subjects.
func (h *harness) leftovers(ctx context.Context, g *gone) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var sessions, runs []string
	for s := range g.sessions {
		sessions = append(sessions, s)
	}
	for r := range g.runs {
		runs = append(runs, r)
	}
	var out []string
	rows, err := h.st.DB.Query(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = 'streammgr' AND column_name IN ('session_id', 'run_id')
		UNION ALL SELECT 'chat_sessions', 'id' ORDER BY 1, 2`)
	if err != nil {
		return nil, err
	}
	cols, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var c [2]string
		err := r.Scan(&c[0], &c[1])
		return c, err
	})
	if err != nil {
		return nil, err
	}
	for _, c := range cols {
		ids := sessions
		if c[1] == "run_id" {
			ids = runs
		}
		var n int
		q := fmt.Sprintf(`SELECT count(*) FROM streammgr.%s WHERE %s::text = ANY($1)`, pgx.Identifier{c[0]}.Sanitize(),
			pgx.Identifier{c[1]}.Sanitize())
		if err := h.st.DB.QueryRow(ctx, q, ids).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			out = append(out, fmt.Sprintf("%d rows in %s by %s", n, c[0], c[1]))
		}
	}
	count := func(stream, subject string) (uint64, error) {
		s, err := h.js.Stream(ctx, stream)
		if err != nil {
			return 0, err
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			return 0, err
		}
		return info.State.Subjects[subject], nil
	}
	for s, tenant := range g.sessions {
		subject, _ := events.ChatSubject(tenant, s)
		if n, err := count(events.StreamChat, subject); err != nil || n > 0 {
			out = append(out, fmt.Sprintf("%d messages on %s (%v)", n, subject, err))
		}
	}
	for r, tenant := range g.runs {
		subject, _ := events.EventsSubject(tenant, r)
		if n, err := count(events.StreamEvents, subject); err != nil || n > 0 {
			out = append(out, fmt.Sprintf("%d messages on %s (%v)", n, subject, err))
		}
	}
	return out, nil
}

// waitNothingLeft waits until nothing of the deleted sessions and runs is
// left (a cancelled run's last events may still be on their way when its
// session's deletion returns).
func (h *harness) waitNothingLeft(ctx context.Context, g *gone) {
	h.t.Helper()
	var left []string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if left, err = h.leftovers(ctx, g); err == nil && len(left) == 0 {
			return
		}
	}
	h.t.Errorf("deleted sessions left behind: %s (%v)", strings.Join(left, "; "), err)
}
