package worker

import (
	"cmp"
	"context"
	"slices"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/pkg/events"
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
	snapshotUploaded, _ = meter.Int64Counter("clopen.worker.snapshot.uploaded",
		metric.WithDescription("bytes the session captures stored in the snapshot store"), metric.WithUnit("By"))
	snapshotFailures, _ = meter.Int64Counter("clopen.worker.snapshot.failures",
		metric.WithDescription("turns whose session state could not be saved (the turn's result is kept)"))
	snapshotDuration, _ = meter.Float64Histogram("clopen.worker.snapshot.duration",
		metric.WithDescription("session captures (after a turn) and restores (before one), by op"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
)

// The OpenTelemetry GenAI client metrics, one observation per run: the
// tokens it used (input counting cache reads and writes, as the semantic
// conventions ask), how long it took, and how long until the engine's
// first output.
var (
	genAITokens, _ = meter.Int64Histogram("gen_ai.client.token.usage",
		metric.WithDescription("tokens used by one agent run, by token type (input, output)"), metric.WithUnit("{token}"),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216))
	genAIDuration, _ = meter.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithDescription("how long one agent run took, from claim to its end"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92, 300, 900))
	runCost, _ = meter.Float64Counter("clopen.worker.run.cost_usd",
		metric.WithDescription("what runs cost in US dollars, as their engines report it"))
	genAITTFT, _ = meter.Float64Histogram("gen_ai.client.operation.time_to_first_chunk",
		metric.WithDescription("from claim to the engine's first output, by engine, model and provider"), metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30))
)

// genAIAttrs are the attributes of a run's GenAI metrics. withTenant adds
// clopen.tenant (Config.MetricsWithoutTenant turns it off).
func genAIAttrs(job events.Job, withTenant bool) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "invoke_agent"),
		attribute.String("gen_ai.agent.name", string(job.Engine)),
		attribute.String("gen_ai.provider.name", providerName(job)),
		attribute.String("gen_ai.request.model", job.Model),
	}
	if withTenant {
		attrs = append(attrs, attribute.String("clopen.tenant", job.Tenant))
	}
	return attrs
}

// providerName is the run's provider as the GenAI conventions name them:
// the tenant's provider slug when the run names one, else the engine's own
// vendor.
func providerName(job events.Job) string {
	if job.Provider != "" {
		return job.Provider
	}
	switch job.Engine {
	case events.EngineClaudeCode:
		return "anthropic"
	case events.EngineCodex:
		return "openai"
	case events.EngineGemini:
		return "gcp.gemini"
	case events.EngineCopilot:
		return "github.copilot"
	case events.EngineScripted:
		return "clopen.scripted"
	}
	return "unknown"
}

// recordGenAI records one finished run: its duration (with error.type when
// it failed) and its token usage: what the model proxy counted when the run
// went through it (metered), else what the engine's result reported.
func recordGenAI(ctx context.Context, attrs []attribute.KeyValue, took time.Duration, state events.RunStateName, kind events.ErrorKind,
	res *events.Result, metered *events.TokenUsage) {
	done := attrs
	if state == events.RunFailed {
		done = append(slices.Clip(attrs), attribute.String("error.type", cmp.Or(string(kind), "_OTHER")))
	}
	genAIDuration.Record(ctx, took.Seconds(), metric.WithAttributes(done...))
	if res != nil {
		runCost.Add(ctx, res.TotalCostUSD, metric.WithAttributes(attrs...))
	}
	var u events.TokenUsage
	switch {
	case metered != nil:
		u = *metered
	case res != nil:
		u = res.Usage
	default:
		return
	}
	input := u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens
	genAITokens.Record(ctx, input, metric.WithAttributes(append(slices.Clip(attrs), attribute.String("gen_ai.token.type", "input"))...))
	genAITokens.Record(ctx, u.OutputTokens, metric.WithAttributes(append(slices.Clip(attrs), attribute.String("gen_ai.token.type", "output"))...))
}

// zeroCounters makes the series of rare events exist from the start, so a
// dashboard shows zero rather than no data.
func zeroCounters(ctx context.Context) {
	leaseFailures.Add(ctx, 0)
	snapshotFailures.Add(ctx, 0)
	snapshotUploaded.Add(ctx, 0)
}
