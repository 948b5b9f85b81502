package worker

import (
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
)

var meter = otel.Meter("clopen.dev/services/engine-worker")

// Instruments; without a configured meter provider they cost nothing.
var (
	runsActive, _ = meter.Int64UpDownCounter("clopen.worker.runs.active",
		metric.WithDescription("runs this worker owns now"))
	runsFinished, _ = meter.Int64Counter("clopen.worker.runs.finished",
		metric.WithDescription("runs this worker ended, by terminal state and engine"))
	firstOutput, _ = meter.Float64Histogram("clopen.worker.time_to_first_output",
		metric.WithDescription("from claim to the engine's first output"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
	eventsPublished, _ = meter.Int64Counter("clopen.worker.events.published",
		metric.WithDescription("events published to EVENTS (after delta coalescing)"))
	leaseFailures, _ = meter.Int64Counter("clopen.worker.lease.failures",
		metric.WithDescription("lease renewals that failed: the run stopped publishing"))
	catalogFailures, _ = meter.Int64Counter("clopen.worker.catalog.failures",
		metric.WithDescription("model catalog reads that failed and were answered with an empty list, by engine"))
	generations, _ = meter.Float64Histogram("clopen.worker.generation.duration",
		metric.WithDescription("structured generations, by engine, generator and outcome (ok or the error kind)"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180))
)
