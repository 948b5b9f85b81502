package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/internal/engine"
)

// control serves ctl.run.<run>.<verb> requests for every run this worker
// owns. Only the owner is subscribed to a run's subject, so a request reaches
// this run and nothing else.
func (w *Worker) control(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-w.ctl:
			if verb := m.Subject[strings.LastIndexByte(m.Subject, '.')+1:]; verb == events.VerbAsk || verb == events.VerbNotify {
				// A question waits for the user: served on its own.
				go w.serveTool(m, verb)
				continue
			}
			w.reply(m, w.dispatch(m))
		}
	}
}

func (w *Worker) dispatch(m *nats.Msg) events.ControlReply {
	parts := strings.Split(m.Subject, ".") // ctl.run.<run>.<verb>
	if len(parts) != 4 {
		return events.ControlReply{Error: "bad control subject " + m.Subject}
	}
	runID, verb := parts[2], parts[3]
	var req events.ControlRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		return events.ControlReply{Error: "bad control request: " + err.Error()}
	}
	r := w.lookup(runID)
	// A run of another tenant is reported exactly like a run we do not have.
	if r == nil || req.Tenant != r.job.Tenant {
		return events.ControlReply{Error: "run " + runID + " is not running here"}
	}
	switch verb {
	case events.VerbCancel:
		if r.currentState().Terminal() {
			return events.ControlReply{Error: "run already ended", State: r.currentState()}
		}
		why := "cancel requested"
		if req.Reason == events.StopBudget {
			why = "budget exhausted"
		}
		_ = r.setState(events.RunCancelling, why)
		r.cancel(cancelCause(req.Reason, req.Error))
		return events.ControlReply{Accepted: true, State: events.RunCancelling}
	case events.VerbInterrupt:
		r.cancel(engine.ErrInterrupted)
		return events.ControlReply{Accepted: true, State: r.currentState()}
	case events.VerbAnswer:
		if err := r.answer(req); err != nil {
			return events.ControlReply{Error: err.Error(), State: r.currentState()}
		}
		return events.ControlReply{Accepted: true, State: events.RunRunning}
	}
	return events.ControlReply{Error: "unknown control verb " + verb}
}

// budgetStop is the cancel cause of a run streammgr stops because its
// tenant's budget is spent: a hard stop for the adapter (it is
// engine.ErrCancelled), and a failed run with budget_exhausted and the
// budget's message for the worker.
type budgetStop struct{ msg string }

// Error is the message the run fails with.
func (b *budgetStop) Error() string { return b.msg }

// Is makes the adapters see an ordinary cancel.
func (b *budgetStop) Is(target error) bool { return target == engine.ErrCancelled }

// cancelCause is the cause of a cancel with reason and message (a control
// request's or a run flag's).
func cancelCause(reason, msg string) error {
	if reason == events.StopBudget {
		if msg == "" {
			msg = "the tenant's budget is spent"
		}
		return &budgetStop{msg: msg}
	}
	return engine.ErrCancelled
}

func (w *Worker) reply(m *nats.Msg, rep events.ControlReply) {
	if m.Reply == "" {
		return
	}
	b, _ := json.Marshal(rep)
	if err := m.Respond(b); err != nil {
		w.log.Warn("reply to control request", "subject", m.Subject, "err", err)
	}
}

// maintain renews every lease (CAS on the revision: a revision mismatch means
// ownership is gone, so that run stops publishing at once), keeps each job
// in progress, and writes the worker's heartbeat.
func (w *Worker) maintain(ctx context.Context) error {
	tick := time.NewTicker(LeaseTTL / 3)
	defer tick.Stop()
	w.heartbeat(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Concurrently: a thousand leases renewed one after another under
		// load can take longer than their TTL.
		var wg sync.WaitGroup
		sem := make(chan struct{}, 32)
		w.each(func(r *run) {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				w.renew(ctx, r)
			}()
		})
		wg.Wait()
		w.heartbeat(ctx)
	}
}

// watchFlags applies durable run_ctl flags to the runs this worker owns as
// soon as they are set (a cancel streammgr could not deliver directly).
func (w *Worker) watchFlags(ctx context.Context) error {
	watch, err := w.flags.WatchAll(ctx, jetstream.UpdatesOnly())
	if err != nil {
		return fmt.Errorf("watch run flags: %w", err)
	}
	defer func() { _ = watch.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-watch.Updates():
			if !ok {
				return nil
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			r := w.lookup(e.Key())
			var f events.RunFlag
			if r == nil || json.Unmarshal(e.Value(), &f) != nil {
				continue
			}
			switch f.Verb {
			case events.VerbCancel, events.VerbAbandon:
				r.cancel(cancelCause(f.Reason, f.Error))
			case events.VerbInterrupt:
				r.cancel(engine.ErrInterrupted)
			}
		}
	}
}

func (w *Worker) renew(ctx context.Context, r *run) {
	if r.fenced.Load() || r.released.Load() {
		return
	}
	owner, _ := json.Marshal(events.RunOwner{Worker: w.cfg.ID, Tenant: r.job.Tenant, ClaimedAt: time.Now().UTC()})
	rev, err := w.owners.Update(ctx, r.job.RunID, owner, r.rev.Load())
	if errors.Is(err, jetstream.ErrKeyExists) {
		rev, err = w.reclaim(ctx, r, owner)
	}
	switch {
	case err == nil:
		r.rev.Store(rev)
		r.renewedAt.Store(time.Now().UnixNano())
	case ctx.Err() != nil:
		return
	case r.released.Load():
		// The run ended while this renewal was in flight and its lease was
		// deleted under it: nothing was lost.
		return
	case errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyNotFound) ||
		time.Since(time.Unix(0, r.renewedAt.Load())) >= LeaseTTL:
		// Someone else holds the lease (a revision mismatch), or it lapsed
		// while the broker was unreachable: ownership is gone.
		w.log.Error("lease lost: run stops publishing", "run_id", r.job.RunID, "err", err)
		leaseFailures.Add(ctx, 1)
		r.fenced.Store(true)
		r.cancel(errLeaseLost)
		return
	default:
		// The broker did not answer (restarting, a leader election): the
		// lease is still ours until its TTL; try again at the next tick.
		w.log.Warn("lease renewal failed; retrying", "run_id", r.job.RunID, "err", err)
		return
	}
	if r.msg != nil {
		_ = r.msg.InProgress()
	}
}

// reclaim settles a revision mismatch. Under load it is most often our own
// earlier renewal whose reply came too late (the broker applied it, the
// client gave up waiting): the lease is still ours if it still names this
// worker, and is renewed at its current revision. It is gone only when the
// key names another worker or no longer exists; a read that fails says
// nothing either way, so it is reported as the transient error it is and
// the next tick tries again (until the TTL runs out).
func (w *Worker) reclaim(ctx context.Context, r *run, owner []byte) (uint64, error) {
	e, err := w.owners.Get(ctx, r.job.RunID)
	if err != nil {
		return 0, err // ErrKeyNotFound: lapsed; anything else: unknown
	}
	var cur events.RunOwner
	if err := json.Unmarshal(e.Value(), &cur); err != nil || cur.Worker != w.cfg.ID {
		return 0, fmt.Errorf("run %s is held by %q: %w", r.job.RunID, cur.Worker, jetstream.ErrKeyExists)
	}
	return w.owners.Update(ctx, r.job.RunID, owner, e.Revision())
}

func (w *Worker) heartbeat(ctx context.Context) {
	info := events.WorkerInfo{ID: w.cfg.ID, Capacity: w.cfg.Capacity, Load: w.count(), StartedAt: w.started, BeatAt: time.Now().UTC()}
	for typ, v := range w.engineVersions() {
		info.Engines = append(info.Engines, events.EngineStatus{Engine: typ, Version: v})
	}
	info.Unready = w.unreadyEngines()
	b, _ := json.Marshal(info)
	if _, err := w.beats.Put(ctx, w.cfg.ID, b); err != nil && ctx.Err() == nil {
		w.log.Warn("heartbeat", "err", err)
	}
}
