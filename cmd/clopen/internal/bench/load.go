package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// tenant is the benchmark's account: one tenant, an admin key, a project.
type tenant struct {
	c       *client.Client
	key     string
	project string
}

func newTenant(ctx context.Context, db *pgxpool.Pool, url string) (tenant, error) {
	slug := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	if _, err := gateway.CreateTenant(ctx, db, slug, "benchmark"); err != nil {
		return tenant{}, err
	}
	if _, err := gateway.CreateUser(ctx, db, slug, api.CreateUser{Email: "bench@" + slug, Name: "bench", Role: "admin"}); err != nil {
		return tenant{}, err
	}
	key, err := gateway.CreateKey(ctx, db, slug, "bench@"+slug, "bench")
	if err != nil {
		return tenant{}, err
	}
	c := client.New(url, key.Key)
	p, err := c.CreateProject(ctx, api.CreateProject{Name: "bench"})
	if err != nil {
		return tenant{}, err
	}
	return tenant{c: c, key: key.Key, project: p.ID}, nil
}

// StreamResult is the throughput and client latency of concurrent turns.
type StreamResult struct {
	Runs          int     `json:"runs"`
	Clients       int     `json:"clients_per_session"`
	TargetRate    float64 `json:"target_deltas_per_sec"`
	Seconds       float64 `json:"seconds"`
	Frames        int64   `json:"frames_received"`
	Deltas        int64   `json:"deltas_received"`
	EventsStored  int64   `json:"engine_events_stored"`
	EventsPerSec  float64 `json:"engine_events_per_sec"`
	DeltasPerSec  float64 `json:"deltas_per_sec"`
	ClientLatency Summary `json:"client_latency_publish_to_client"`
	// SteadyLatency leaves out the frames that arrived in the first
	// Warmup after the prompts were sent, when every run is starting at
	// once (sessions, jobs, claims, first events): the load's steady state.
	SteadyLatency  Summary `json:"client_latency_steady"`
	CommitLagP99Ms float64 `json:"postgres_commit_lag_p99_ms"`
	// CommitLagP99Over: the p99 lies above CommitLagP99Ms, the histogram's
	// highest bucket.
	CommitLagP99Over bool  `json:"postgres_commit_lag_p99_over,omitempty"`
	CPU              Usage `json:"cpu"`
	Errors           int64 `json:"errors"`
	// Resumes counts clients the gateway disconnected (slow consumers) that
	// joined again at their cursor, as clients do; not errors.
	Resumes int64 `json:"resumes"`
}

// Warmup is the start of a streaming case that SteadyLatency leaves out.
const Warmup = 2 * time.Second

// stream runs `runs` concurrent turns of `deltas` text deltas each, paced
// so that all together emit about `rate` deltas per second (0: unpaced),
// each session watched by `clients` WebSocket clients.
func stream(ctx context.Context, sys *System, db *pgxpool.Pool, tn tenant, runs, deltas, clients int, rate float64, progress io.Writer) (StreamResult, error) {
	res := StreamResult{Runs: runs, Clients: clients, TargetRate: rate}
	delay := time.Duration(0)
	if rate > 0 {
		delay = time.Duration(float64(runs) / rate * float64(time.Second))
	}
	model := fmt.Sprintf("scripted/bench?deltas=%d&chunk=8&delay=%s", deltas, delay)
	sessions := make([]events.Session, runs)
	for i := range sessions {
		s, err := tn.c.CreateSession(ctx, tn.project, api.CreateSession{Model: model})
		if err != nil {
			return res, err
		}
		sessions[i] = s
	}
	var lat, steady Latencies
	var frames, deltasIn, errs atomic.Int64
	var conns []*client.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	type watch struct {
		conn    *client.Conn
		session string
	}
	var watches []watch
	for _, s := range sessions {
		for range clients {
			cn, err := tn.c.Dial(ctx)
			if err != nil {
				return res, err
			}
			if _, err := cn.Join(ctx, s.ID, nil); err != nil {
				return res, err
			}
			conns = append(conns, cn)
			watches = append(watches, watch{cn, s.ID})
		}
	}
	stop := startProgress(progress, "stream", func() string {
		return fmt.Sprintf("%d frames, %d deltas, p99 %.1f ms", frames.Load(), deltasIn.Load(), lat.Summary().P99)
	})
	defer stop()
	before := sys.Sample()
	began := time.Now()
	warm := began.Add(Warmup)
	runIDs := make([]string, runs)
	var g errgroup.Group
	for i, s := range sessions {
		g.Go(func() error {
			r, err := tn.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "benchmark turn"})
			runIDs[i] = r.RunID
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	var wg sync.WaitGroup
	var resumes atomic.Int64
	for _, w := range watches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cursor uint64 // of the last frame of this session
			conn := w.conn
			for {
				select {
				case f, ok := <-conn.Frames():
					if !ok {
						// Disconnected (a slow consumer gets a bye with its
						// cursor): a client resumes where it was, like any user.
						if resumes.Add(1) > int64(len(watches)) {
							errs.Add(1)
							return
						}
						if progress != nil {
							fmt.Fprintf(progress, "  a client of session %s was disconnected (%v); resuming at cursor %d\n", w.session, conn.Err(), cursor)
						}
						next, err := tn.c.Dial(ctx)
						if err == nil {
							_, err = next.Join(ctx, w.session, &cursor)
						}
						if err != nil {
							errs.Add(1)
							return
						}
						defer next.Close()
						conn = next
						continue
					}
					if f.Type != events.WSFrameEvent {
						continue
					}
					now := time.Now()
					ev, err := events.DecodeChatEvent(f.Event)
					if err != nil {
						errs.Add(1)
						continue
					}
					if ev.ChatSessionID != w.session {
						continue // a notification about another session of the project
					}
					if f.Cursor > 0 {
						cursor = f.Cursor
					}
					switch d := ev.Data.(type) {
					case events.ChatPartial:
						if d.EventType == events.PartialUpdate {
							frames.Add(1)
							deltasIn.Add(int64(len(d.DeltaText) / 8))
							lat.Add(now.Sub(ev.Timestamp))
							if now.After(warm) {
								steady.Add(now.Sub(ev.Timestamp))
							}
						}
					case events.ChatError:
						errs.Add(1)
					case events.ChatStreamFinished:
						return
					}
				case <-time.After(2 * time.Minute):
					errs.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(began).Seconds()
	res.CPU = sys.Sample().Diff(before)
	res.Frames, res.Deltas, res.Errors, res.Resumes = frames.Load(), deltasIn.Load(), errs.Load(), resumes.Load()
	res.ClientLatency, res.SteadyLatency = lat.Summary(), steady.Summary()
	res.DeltasPerSec = float64(res.Deltas) / float64(clients) / res.Seconds
	// Engine events stored for these runs, once the last batch committed.
	time.Sleep(500 * time.Millisecond)
	if err := db.QueryRow(ctx, `SELECT count(*) FROM streammgr.run_events WHERE run_id = ANY($1::uuid[]) AND epoch > 0`,
		runIDs).Scan(&res.EventsStored); err != nil {
		return res, err
	}
	res.EventsPerSec = float64(res.EventsStored) / res.Seconds
	return res, nil
}

// CancelResult is the time from a cancel request to the client seeing the
// run's terminal event.
type CancelResult struct {
	Runs    int     `json:"runs"`
	Latency Summary `json:"cancel_to_terminal_at_client"`
	// Reply is the time to the cancel's reply (the owning worker accepted
	// it); Emitted, to the stamp of the terminal event (the worker sent it).
	// Latency minus Emitted is the way back: streammgr, Postgres, CHAT, the
	// gateway.
	Reply   Summary `json:"cancel_to_reply"`
	Emitted Summary `json:"cancel_to_terminal_emitted"`
	Errors  int     `json:"errors"`
}

func cancels(ctx context.Context, tn tenant, runs int, progress io.Writer) (CancelResult, error) {
	res := CancelResult{Runs: runs}
	var lat, reply, emitted Latencies
	var failed atomic.Int64
	var g errgroup.Group
	g.SetLimit(20)
	var done atomic.Int64
	stop := startProgress(progress, "cancel", func() string { return fmt.Sprintf("%d/%d cancelled", done.Load(), runs) })
	defer stop()
	for range runs {
		g.Go(func() error {
			defer done.Add(1)
			s, err := tn.c.CreateSession(ctx, tn.project, api.CreateSession{Model: "scripted/slow?delay=20ms"})
			if err != nil {
				return err
			}
			cn, err := tn.c.Dial(ctx)
			if err != nil {
				return err
			}
			defer cn.Close()
			if _, err := cn.Join(ctx, s.ID, nil); err != nil {
				return err
			}
			r, err := cn.Send(ctx, s.ID, api.SendMessage{Text: "stream slowly"})
			if err != nil {
				return err
			}
			if !waitFor(cn, r.RunID, func(ev events.ChatEvent) bool {
				p, ok := ev.Data.(events.ChatPartial)
				return ok && p.EventType == events.PartialUpdate
			}) {
				failed.Add(1)
				return nil
			}
			t0 := time.Now()
			if _, err := cn.Cancel(ctx, s.ID, r.RunID); err != nil {
				failed.Add(1)
				return nil
			}
			replied := time.Since(t0)
			var stamped time.Time
			if !waitFor(cn, r.RunID, func(ev events.ChatEvent) bool {
				rs, ok := ev.Data.(events.ChatRunState)
				stamped = ev.Timestamp
				return ok && rs.State == events.RunCancelled
			}) {
				failed.Add(1)
				return nil
			}
			lat.Add(time.Since(t0))
			reply.Add(replied)
			emitted.Add(stamped.Sub(t0))
			return nil
		})
	}
	err := g.Wait()
	res.Latency, res.Reply, res.Emitted, res.Errors = lat.Summary(), reply.Summary(), emitted.Summary(), int(failed.Load())
	return res, err
}

func waitFor(cn *client.Conn, run string, match func(events.ChatEvent) bool) bool {
	return waitForWithin(cn, run, 30*time.Second, match)
}

// waitForWithin waits up to d for a frame of run that match accepts.
func waitForWithin(cn *client.Conn, run string, d time.Duration, match func(events.ChatEvent) bool) bool {
	timeout := time.After(d)
	for {
		select {
		case f, ok := <-cn.Frames():
			if !ok {
				return false
			}
			if f.Type != events.WSFrameEvent {
				continue
			}
			if ev, err := events.DecodeChatEvent(f.Event); err == nil && ev.RunID == run && match(ev) {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// IdleResult is the worker's memory per run parked on a question.
type IdleResult struct {
	Runs            int     `json:"runs"`
	Parked          int     `json:"parked"`
	Completed       int     `json:"completed_after_answer"`
	HeapPerRunBytes float64 `json:"worker_heap_per_idle_run_bytes"`
	RSSPerRunBytes  float64 `json:"worker_rss_per_idle_run_bytes"`
	Errors          int     `json:"errors"`
}

// idle parks `runs` scripted runs on a question on one worker, measures the
// worker's memory before and after, then answers them all and checks every
// run completes.
func idle(ctx context.Context, sys *System, db *pgxpool.Pool, tn tenant, runs int, progress io.Writer) (IdleResult, error) {
	res := IdleResult{Runs: runs}
	heap0, rss0 := sys.Metric("engine-worker", "go_memstats_heap_inuse_bytes"), sys.Metric("engine-worker", "process_resident_memory_bytes")
	ids := make([]string, runs)
	sessions := make([]string, runs)
	var g errgroup.Group
	g.SetLimit(32)
	for i := range runs {
		g.Go(func() error {
			s, err := tn.c.CreateSession(ctx, tn.project, api.CreateSession{Model: "scripted/ask"})
			if err != nil {
				return err
			}
			r, err := tn.c.SendMessage(ctx, s.ID, api.SendMessage{Text: "ask me"})
			ids[i], sessions[i] = r.RunID, s.ID
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	stop := startProgress(progress, "idle", func() string { return fmt.Sprintf("%d/%d parked", res.Parked, runs) })
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM streammgr.runs WHERE id = ANY($1::uuid[]) AND state = 'awaiting_input'`,
			ids).Scan(&res.Parked); err != nil {
			stop()
			return res, err
		}
		if res.Parked == runs {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	stop()
	time.Sleep(time.Second) // let the publishers settle
	heap1, rss1 := sys.Metric("engine-worker", "go_memstats_heap_inuse_bytes"), sys.Metric("engine-worker", "process_resident_memory_bytes")
	res.HeapPerRunBytes = (heap1 - heap0) / float64(runs)
	res.RSSPerRunBytes = (rss1 - rss0) / float64(runs)
	// Answer every question: every run must complete.
	var failed atomic.Int64
	for i := range runs {
		g.Go(func() error {
			var toolUse string
			if err := db.QueryRow(ctx, `SELECT payload->>'toolUseId' FROM streammgr.run_events WHERE run_id = $1
				AND type = 'run_state' AND payload->>'state' = 'awaiting_input' ORDER BY seq DESC LIMIT 1`, ids[i]).Scan(&toolUse); err != nil {
				failed.Add(1)
				return nil
			}
			_, err := tn.c.Answer(ctx, sessions[i], api.Answer{RunID: ids[i], ToolUseID: toolUse,
				Answers: map[string]string{"Which database should the service use?": "Postgres"}})
			if err != nil {
				failed.Add(1)
			}
			return nil
		})
	}
	_ = g.Wait()
	deadline = time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		if err := db.QueryRow(ctx, `SELECT count(*) FROM streammgr.runs WHERE id = ANY($1::uuid[]) AND state = 'completed'`,
			ids).Scan(&res.Completed); err != nil {
			return res, err
		}
		if res.Completed == runs {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	res.Errors = int(failed.Load()) + runs - res.Completed
	return res, nil
}

// startProgress prints a status line every second until stopped.
func startProgress(w io.Writer, phase string, status func() string) func() {
	if w == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		began := time.Now()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(w, "  %-7s %5.0fs  %s\n", phase, time.Since(began).Seconds(), status())
			}
		}
	}()
	return func() { close(done) }
}
