package stack

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"clopen.dev/pkg/events"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
	"clopen.dev/services/streammgr"
)

// fate is what the chaos test does with one session.
type fate int

const (
	completes         fate = iota // one fast turn, to the end
	completesTwo                  // two turns, the second queued behind the first
	answersQuestion               // a question, answered; then the turn ends
	deletedEarly                  // deleted right after its send: queued, dispatched or just claimed
	deletedMidStream              // deleted while its answer streams
	deletedParked                 // deleted while parked on a question
	deletedWithQueued             // deleted while a second turn waits behind the streaming one
)

// chaosFates are dealt to the sessions in turn: half of them survive.
var chaosFates = []fate{completes, deletedEarly, completesTwo, deletedMidStream, answersQuestion,
	deletedParked, completes, deletedWithQueued, completesTwo, deletedMidStream}

func (f fate) survives() bool { return f <= answersQuestion }

// chaosSession is one session of the chaos test and what became of it.
type chaosSession struct {
	acc     account
	project string
	doomed  bool // its project is deleted
	fate    fate
	id      string
	tenant  string
	runs    []string
}

// TestChaosDeletionsWhileStreaming streams 48 sessions of three tenants
// in six projects with the scripted engine — fast answers, slow ones,
// questions, turns queued behind an active one — while sessions are deleted
// at random moments (right after the send, mid-stream, parked on a question,
// with a turn queued) and two whole projects are deleted over REST. Every
// other session's turns complete with every event stored exactly once, no
// run is left unfinished, and nothing of a deleted session is left in any
// streammgr table or on the bus.
func TestChaosDeletionsWhileStreaming(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	wc := worker.DefaultConfig()
	wc.Capacity = 32
	wc.Workspaces = t.TempDir()
	sc := streammgr.DefaultConfig()
	sc.TenantMaxConcurrent = 64 // every session streams at once: admission is not what this is about
	h := start(t, Config{Workers: 2, Worker: wc, Gateway: unthrottled(), Streammgr: sc})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	var sessions []*chaosSession
	var doomedProjects []*chaosSession // one session per doomed project, for its account and id
	for a := range 3 {
		acc := h.account(fmt.Sprintf("chaos-%d", a))
		second, err := acc.c.CreateProject(ctx, api.CreateProject{Name: "second"})
		if err != nil {
			t.Fatal(err)
		}
		for p, project := range []string{acc.project.ID, second.ID} {
			doomed := a < 2 && p == 1 // the second project of two tenants goes
			for i := range 8 {
				s := &chaosSession{acc: acc, project: project, doomed: doomed, fate: chaosFates[(a*16+p*8+i)%len(chaosFates)]}
				sessions = append(sessions, s)
				if doomed && i == 0 {
					doomedProjects = append(doomedProjects, s)
				}
			}
		}
	}
	deleted := newGone()
	var created, wg sync.WaitGroup
	errs := make(chan error, len(sessions)+len(doomedProjects))
	for i, s := range sessions {
		created.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			err := s.play(ctx, h, rng, deleted, created.Done)
			if err != nil && !s.doomed {
				errs <- fmt.Errorf("session %d (fate %d): %w", i, s.fate, err)
			}
		}()
	}
	for i, p := range doomedProjects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created.Wait()
			rng := rand.New(rand.NewPCG(seed, uint64(1000+i)))
			time.Sleep(time.Duration(rng.IntN(2000)) * time.Millisecond) // any moment of its sessions' turns
			if err := p.acc.c.DeleteProject(ctx, p.project); err != nil {
				errs <- fmt.Errorf("delete project %s: %w", p.project, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}

	survivors := 0
	for _, s := range sessions {
		if s.doomed || !s.fate.survives() {
			continue
		}
		survivors++
		for _, run := range s.runs {
			if err := h.storedExactlyOnce(ctx, s.acc.c, s.tenant, run); err != nil {
				t.Error(err)
			}
		}
		got, err := s.acc.c.Session(ctx, s.id)
		if err != nil || got.ActiveRunID != "" || got.QueuedRunsCount != 0 {
			t.Errorf("surviving session %s: active run %q, %d queued (%v)", s.id, got.ActiveRunID, got.QueuedRunsCount, err)
		}
	}
	var unfinished []string
	rows, err := h.st.DB.Query(ctx, `SELECT id::text || ' ' || state FROM streammgr.runs
		WHERE state NOT IN ('completed', 'failed', 'cancelled', 'lost')`)
	if err == nil {
		for rows.Next() {
			var r string
			if rows.Scan(&r) == nil {
				unfinished = append(unfinished, r)
			}
		}
		rows.Close()
	}
	if err != nil || len(unfinished) > 0 {
		t.Errorf("runs left unfinished: %v (%v)", unfinished, err)
	}
	for _, p := range doomedProjects {
		if _, err := p.acc.c.Sessions(ctx, p.project, 10); !isStatus(err, http.StatusNotFound) {
			t.Errorf("deleted project %s still lists sessions: %v", p.project, err)
		}
	}
	h.waitNothingLeft(ctx, deleted)
	t.Logf("%d sessions, %d survived, %d deleted", len(sessions), survivors, len(deleted.sessions))
}

// play runs a session's fate. Every session is recorded as deleted or not
// before created is called; a doomed session's project may go at any moment
// after that, and its errors are expected.
func (s *chaosSession) play(ctx context.Context, h *harness, rng *rand.Rand, deleted *gone, created func()) error {
	// The answers of sessions to delete stream for 40 s: they are still
	// streaming when deleted, however loaded the machine.
	models := map[fate]string{completes: "scripted/long", completesTwo: "scripted/slow?delay=2ms",
		answersQuestion: "scripted/ask", deletedEarly: "scripted/slow?delay=100ms", deletedMidStream: "scripted/slow?delay=100ms",
		deletedParked: "scripted/ask", deletedWithQueued: "scripted/slow?delay=100ms"}
	c := s.acc.c
	sess, err := c.CreateSession(ctx, s.project, api.CreateSession{Model: models[s.fate]})
	if err != nil {
		created()
		return fmt.Errorf("create session: %w", err)
	}
	s.id = sess.ID
	if s.tenant, err = h.tenantOf(ctx, s.id); err != nil {
		created()
		return err
	}
	send := func(text string) (events.StartTurnReply, error) {
		r, err := c.SendMessage(ctx, s.id, api.SendMessage{Text: text})
		if err == nil {
			s.runs = append(s.runs, r.RunID)
			if !s.fate.survives() || s.doomed {
				deleted.add(s.tenant, s.id, r.RunID)
			}
		}
		return r, err
	}
	if !s.fate.survives() || s.doomed {
		deleted.add(s.tenant, s.id)
	}
	first, err := send("first")
	created()
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	del := func() error {
		if err := c.DeleteSession(ctx, s.id); err != nil {
			return fmt.Errorf("delete session: %w", err)
		}
		if _, err := c.Session(ctx, s.id); !isStatus(err, http.StatusNotFound) {
			return fmt.Errorf("deleted session still there: %v", err)
		}
		return nil
	}
	switch s.fate {
	case completes:
		_, err := pollRun(ctx, c, first.RunID, ended(events.RunCompleted))
		return err
	case completesTwo:
		second, err := send("second")
		if err != nil {
			return fmt.Errorf("second send: %w", err)
		}
		for _, run := range []string{first.RunID, second.RunID} {
			if _, err := pollRun(ctx, c, run, ended(events.RunCompleted)); err != nil {
				return err
			}
		}
		return nil
	case answersQuestion:
		toolUse, err := awaitQuestion(ctx, c, s.id, first.RunID)
		if err != nil {
			return err
		}
		if _, err := c.Answer(ctx, s.id, api.Answer{ToolUseID: toolUse,
			Answers: map[string]string{"Which database should the service use?": "SQLite"}}); err != nil {
			return fmt.Errorf("answer: %w", err)
		}
		_, err = pollRun(ctx, c, first.RunID, ended(events.RunCompleted))
		return err
	case deletedEarly:
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		return del()
	case deletedMidStream:
		if _, err := pollRun(ctx, c, first.RunID, streaming(c, ctx)); err != nil {
			return err
		}
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		return del()
	case deletedParked:
		if _, err := awaitQuestion(ctx, c, s.id, first.RunID); err != nil {
			return err
		}
		return del()
	case deletedWithQueued:
		second, err := send("second")
		if err != nil {
			return fmt.Errorf("second send: %w", err)
		}
		if !second.Queued {
			return fmt.Errorf("second turn not queued behind the streaming one")
		}
		if _, err := pollRun(ctx, c, first.RunID, streaming(c, ctx)); err != nil {
			return err
		}
		return del()
	}
	return nil
}

// awaitQuestion waits until the run is parked on its question and returns
// the question's tool use id, read from the saved messages.
func awaitQuestion(ctx context.Context, c *client.Client, session, run string) (string, error) {
	parked := func(r events.Run) (bool, error) {
		if r.State.Terminal() {
			return false, fmt.Errorf("run %s ended (%s) instead of asking", r.ID, r.State)
		}
		return r.State == events.RunAwaitingInput, nil
	}
	if _, err := pollRun(ctx, c, run, parked); err != nil {
		return "", err
	}
	msgs, err := c.Messages(ctx, session, "", 1000)
	if err != nil {
		return "", fmt.Errorf("messages: %w", err)
	}
	for _, m := range msgs.Messages {
		o, err := events.DecodeOutput(m.Message)
		if err != nil || m.RunID != run {
			continue
		}
		if a, ok := o.(events.AssistantMessage); ok {
			for _, b := range a.Content {
				if tu, ok := b.(events.ToolUseBlock); ok && tu.Name == string(events.ToolAskUserQuestion) {
					return tu.ID, nil
				}
			}
		}
	}
	return "", fmt.Errorf("run %s is parked, but no saved message asks a question", run)
}

// isStatus reports an API error with the given HTTP status.
func isStatus(err error, status int) bool {
	var apiErr *events.APIError
	return errors.As(err, &apiErr) && apiErr.Status == status
}
