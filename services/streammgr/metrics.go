package streammgr

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

var meter = otel.Meter("clopen.dev/services/streammgr")

// Instruments; without a configured meter provider they cost nothing.
var (
	batchLatency, _ = meter.Float64Histogram("clopen.streammgr.batch.duration",
		metric.WithDescription("Postgres commit time of one batch of events"), metric.WithUnit("s"))
	batchRows, _ = meter.Int64Histogram("clopen.streammgr.batch.events",
		metric.WithDescription("events per committed batch"))
	runsEnded, _ = meter.Int64Counter("clopen.streammgr.runs.ended",
		metric.WithDescription("runs that reached a terminal state, by state"))
	runsAdmitted, _ = meter.Int64Counter("clopen.streammgr.runs.admitted",
		metric.WithDescription("runs dispatched after waiting for their tenant's admission"))
	runsHeld, _ = meter.Int64Counter("clopen.streammgr.runs.held",
		metric.WithDescription("runs held because their tenant was at its limit of concurrent runs"))
	runsLost, _ = meter.Int64Counter("clopen.streammgr.runs.lost",
		metric.WithDescription("runs whose worker vanished"))
	eventsDead, _ = meter.Int64Counter("clopen.streammgr.events.dead",
		metric.WithDescription("events Postgres refused, set aside in streammgr.dead_events, by output type"))
	pinLost, _ = meter.Int64Counter("clopen.streammgr.consumer.pin_lost",
		metric.WithDescription("pull requests of the EVENTS consumer refused because this instance's pin had lapsed"))
	eventsRouted, _ = meter.Int64Counter("clopen.streammgr.events.routed",
		metric.WithDescription("engine events routed, by output type"))
	budgetExhausted, _ = meter.Int64Counter("clopen.budget.exhausted",
		metric.WithDescription("sends refused (action refused) and running turns stopped (action stopped) because a budget of their tenant is spent, by unit, period and tenant"))
	commitLag, _ = meter.Float64Histogram("clopen.streammgr.commit.lag",
		metric.WithDescription("from the worker emitting an event to its batch committing in Postgres"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
)

// zeroCounters makes the series of rare events exist from the start, so a
// dashboard shows zero rather than no data.
func zeroCounters(ctx context.Context) {
	for _, c := range []metric.Int64Counter{runsHeld, runsLost, pinLost, eventsDead} {
		c.Add(ctx, 0)
	}
	for _, action := range []string{actionRefused, actionStopped} {
		budgetExhausted.Add(ctx, 0, metric.WithAttributes(attribute.String("action", action)))
	}
}
