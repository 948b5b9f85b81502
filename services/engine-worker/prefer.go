package worker

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
)

// Dispatch prefers the worker that holds a session's newest snapshot: the
// job names the worker whose turn left it (events.Job.PreferWorker), and
// for PreferFor after the job was queued any other worker hands it back
// (a Nak with a short delay) while that worker is alive, offers the
// engine and has a slot free, so the holder can take it and skip the
// restore. Past PreferFor, or when the holder is gone or full, whoever
// pulls the job runs it: the preference never holds a turn up for longer.

// DefaultPreferFor is how long other workers leave a job to the worker
// holding its snapshot.
const DefaultPreferFor = 1500 * time.Millisecond

// preferRetry is how soon a job handed back to its holder is offered
// again.
const preferRetry = 150 * time.Millisecond

var jobsYielded, _ = meter.Int64Counter("clopen.worker.jobs.yielded",
	metric.WithDescription("jobs this worker handed back for a moment to the worker holding their session's snapshot"))

// yields reports whether the worker handed msg, the message of job, back
// for the worker holding job's snapshot to take.
func (w *Worker) yields(ctx context.Context, job events.Job, msg jetstream.Msg) bool {
	holder := job.PreferWorker
	if holder == "" || holder == w.cfg.ID || w.cfg.PreferFor <= 0 || job.Snapshot == "" {
		return false
	}
	meta, err := msg.Metadata()
	if err != nil || time.Since(meta.Timestamp) > w.cfg.PreferFor {
		return false
	}
	if ws, err := w.sessionWorkspace(job); err == nil && readMarker(ws) == job.Snapshot {
		return false // this worker holds it too
	}
	if !w.canTake(ctx, holder, job.Engine) {
		return false
	}
	_ = msg.NakWithDelay(preferRetry)
	jobsYielded.Add(ctx, 1, metric.WithAttributes(attribute.String("engine", string(job.Engine))))
	return true
}

// canTake reports whether worker's latest heartbeat shows it alive,
// offering engine, with a slot free.
func (w *Worker) canTake(ctx context.Context, worker string, engine events.EngineType) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	e, err := w.beats.Get(ctx, worker)
	if err != nil {
		return false
	}
	var info events.WorkerInfo
	if json.Unmarshal(e.Value(), &info) != nil || info.Load >= info.Capacity {
		return false
	}
	return slices.ContainsFunc(info.Engines, func(s events.EngineStatus) bool { return s.Engine == engine })
}
