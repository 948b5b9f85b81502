package streammgr

import (
	"context"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
)

// observeJobs exports the JOBS backlog by engine: turns dispatched and not
// yet finished by a worker (JOBS is a work queue, so a job leaves it when
// its worker acks it at the run's end). Every engine is reported, zero
// when it has no jobs, so a panel never shows "no data" for an idle one.
func observeJobs(ctx context.Context, js jetstream.JetStream) (metric.Registration, error) {
	stream, err := js.Stream(ctx, events.StreamJobs) // declared before
	if err != nil {
		return nil, fmt.Errorf("jobs metrics: %w", err)
	}
	backlog, err := meter.Int64ObservableGauge("clopen.streammgr.jobs.backlog",
		metric.WithDescription("jobs in JOBS (waiting for a worker or running), by engine"), metric.WithUnit("{job}"))
	if err != nil {
		return nil, fmt.Errorf("jobs metrics: %w", err)
	}
	return meter.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		info, err := stream.Info(ctx, jetstream.WithSubjectFilter("job.>"))
		if err != nil {
			return nil // not observable right now
		}
		for _, e := range events.EngineTypes() {
			n := info.State.Subjects["job."+string(e)]
			o.ObserveInt64(backlog, int64(n), metric.WithAttributes(attribute.String("engine", string(e))))
		}
		for subject, n := range info.State.Subjects {
			if e := strings.TrimPrefix(subject, "job."); !events.EngineType(e).Valid() {
				// A subject no engine type names: still shown, not lost.
				o.ObserveInt64(backlog, int64(n), metric.WithAttributes(attribute.String("engine", e)))
			}
		}
		return nil
	}, backlog)
}
