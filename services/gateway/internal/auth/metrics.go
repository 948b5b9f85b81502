package auth

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

var (
	meter = otel.Meter("clopen.dev/services/gateway/auth")

	rejected, _ = meter.Int64Counter("clopen.gateway.auth.rejected",
		metric.WithDescription("requests refused for their API key, by reason (missing, invalid, revoked, expired)"), metric.WithUnit("{request}"))
	rateLimited, _ = meter.Int64Counter("clopen.gateway.rate_limited",
		metric.WithDescription("requests and WebSocket frames refused for the key's rate limit"), metric.WithUnit("{request}"))
)

// The reasons a key is refused, as the rejected counter's reason attribute.
var rejectReasons = []string{"missing", "invalid", "revoked", "expired"}

// zeroCounters makes every series exist from the start, so a dashboard
// shows zero rejections rather than no data.
func zeroCounters(ctx context.Context) {
	for _, r := range rejectReasons {
		rejected.Add(ctx, 0, metric.WithAttributes(attribute.String("reason", r)))
	}
	rateLimited.Add(ctx, 0)
}

func countRejected(ctx context.Context, reason string) {
	rejected.Add(ctx, 1, metric.WithAttributes(attribute.String("reason", reason)))
}
