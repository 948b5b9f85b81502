package stack

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// TestDeleteWhileStreamingStallsNoOne deletes sessions of one tenant in the
// middle of their runs while sessions of two tenants stream: every deletion succeeds,
// the other runs complete with every event stored, a new send is accepted
// and completes, streammgr stays ready, and nothing of a deleted session is
// left in streammgr's tables or on the bus.
func TestDeleteWhileStreamingStallsNoOne(t *testing.T) {
	h := start(t, Config{Gateway: unthrottled()})
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
		victim := i%2 == 0 && i < 8 // four of tenant a's five
		model := "scripted/slow?delay=5ms"
		if victim {
			model = "scripted/slow?delay=200ms" // streams for 80 s: deleted mid-stream however loaded the machine
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
		if victim {
			victims = append(victims, tr)
		} else {
			others = append(others, tr)
		}
	}
	deleted := newGone()
	for _, v := range victims {
		waitStreaming(ctx, t, v.acc.c, v.run)
		tenant, err := h.tenantOf(ctx, v.session)
		if err != nil {
			t.Fatal(err)
		}
		deleted.add(tenant, v.session, v.run)
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
		tenant, err := h.tenantOf(ctx, o.session)
		if err != nil {
			t.Fatal(err)
		}
		if err := h.storedExactlyOnce(ctx, o.acc.c, tenant, o.run); err != nil {
			t.Error(err)
		}
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

// pollRun polls a run over REST until done says it is done (or fails), or
// ctx ends.
func pollRun(ctx context.Context, c *client.Client, run string, done func(events.Run) (bool, error)) (events.Run, error) {
	for {
		r, err := c.Run(ctx, run)
		if isStatus(err, http.StatusNotFound) {
			return r, fmt.Errorf("run %s: %w", run, err)
		}
		if err == nil {
			ok, err := done(r)
			if ok || err != nil {
				return r, err
			}
		}
		select {
		case <-ctx.Done():
			return r, fmt.Errorf("run %s: still %q when the test ran out of time (%v)", run, r.State, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// unthrottled is the gateway's configuration with a request rate no test
// client reaches: the tests that poll many runs over REST are not about the
// gateway's rate limit.
func unthrottled() *gateway.Config {
	gc := gateway.DefaultConfig()
	gc.RateLimit, gc.RateBurst = 1e6, 1e6
	return &gc
}

// streaming is done once the run is running and has stored a few events.
func streaming(c *client.Client, ctx context.Context) func(events.Run) (bool, error) {
	return func(r events.Run) (bool, error) {
		if r.State.Terminal() {
			return false, fmt.Errorf("run %s ended (%s) before it could be caught streaming", r.ID, r.State)
		}
		if r.State != events.RunRunning {
			return false, nil
		}
		evs, err := c.RunEvents(ctx, r.ID, 0, 0, 10)
		return err == nil && len(evs) >= 5, nil
	}
}

// ended is done once the run's committed state is terminal; it wants want.
func ended(want events.RunStateName) func(events.Run) (bool, error) {
	return func(r events.Run) (bool, error) {
		if !r.State.Terminal() {
			return false, nil
		}
		if r.State != want {
			return true, fmt.Errorf("run %s ended %s, want %s", r.ID, r.State, want)
		}
		return true, nil
	}
}

func waitStreaming(ctx context.Context, t *testing.T, c *client.Client, run string) {
	t.Helper()
	if _, err := pollRun(ctx, c, run, streaming(c, ctx)); err != nil {
		t.Fatal(err)
	}
}

func waitRunEnded(ctx context.Context, t *testing.T, c *client.Client, run string, want events.RunStateName) {
	t.Helper()
	if _, err := pollRun(ctx, c, run, ended(want)); err != nil {
		t.Fatal(err)
	}
}

// storedExactlyOnce compares a run's stored events with what its worker
// published on EVENTS: the same events in the same order, each once, seqs
// dense from 1, after the user message streammgr recorded at epoch 0.
func (h *harness) storedExactlyOnce(ctx context.Context, c *client.Client, tenant, run string) error {
	stored, err := c.RunEvents(ctx, run, 0, 0, 1000)
	if err != nil {
		return fmt.Errorf("run %s: stored events: %w", run, err)
	}
	var published []events.Envelope
	for try := 0; ; try++ {
		if published, err = h.readRunEvents(tenant, run); err == nil || try == 5 {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("run %s: events on the bus: %w", run, err)
	}
	if len(stored) != len(published)+1 || stored[0].Epoch != 0 || stored[0].Type != events.TypeUser {
		return fmt.Errorf("run %s: stored %d events, published %d (+1 user message)", run, len(stored), len(published))
	}
	for i, env := range published {
		ev := stored[i+1]
		if ev.Epoch != env.Epoch || ev.Seq != env.Seq || ev.Seq != uint64(i+1) || ev.Type != env.Output.OutputType() {
			return fmt.Errorf("run %s: stored event %d = %d/%d %s, published %d/%d %s", run, i, ev.Epoch, ev.Seq, ev.Type,
				env.Epoch, env.Seq, env.Output.OutputType())
		}
	}
	return nil
}

// tenantOf reads a session's tenant from streammgr's table: a REST client
// does not see tenant ids, and the bus subjects carry them.
func (h *harness) tenantOf(ctx context.Context, session string) (string, error) {
	var tenant string
	err := h.st.DB.QueryRow(ctx, `SELECT tenant_id::text FROM streammgr.chat_sessions WHERE id = $1`, session).Scan(&tenant)
	if err != nil {
		return "", fmt.Errorf("tenant of session %s: %w", session, err)
	}
	return tenant, nil
}

// gone names deleted sessions and runs, each with its tenant.
type gone struct {
	mu       sync.Mutex
	sessions map[string]string
	runs     map[string]string
}

func newGone() *gone { return &gone{sessions: map[string]string{}, runs: map[string]string{}} }

// add records a session of tenant and runs of it that are to be deleted.
func (g *gone) add(tenant, session string, runs ...string) {
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
	onBus := func(stream, subject string) {
		s, err := h.js.Stream(ctx, stream)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", stream, err))
			return
		}
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", stream, err))
			return
		}
		if n := info.State.Subjects[subject]; n > 0 {
			last, _ := s.GetLastMsgForSubject(ctx, subject)
			var body string
			if last != nil {
				body = string(last.Data[:min(len(last.Data), 200)])
			}
			out = append(out, fmt.Sprintf("%d messages on %s, the last %s", n, subject, body))
		}
	}
	for s, tenant := range g.sessions {
		subject, _ := events.ChatSubject(tenant, s)
		onBus(events.StreamChat, subject)
	}
	for r, tenant := range g.runs {
		subject, _ := events.EventsSubject(tenant, r)
		onBus(events.StreamEvents, subject)
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
