package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"

	"clopen.dev/services/gateway/internal/live"
)

var meter = otel.Meter("clopen.dev/services/gateway")

// instrument measures every request: otelhttp records
// http.server.request.duration (and sizes) by method, route pattern and
// status, which is the gateway's rate, errors and latency, and starts the
// request's span, continuing a client's traceparent.
func instrument(h http.Handler) http.Handler {
	return otelhttp.NewHandler(h, "gateway")
}

// observeHub exports the WebSocket hub's counts: sockets open now, those
// closed for falling behind, and the deepest outbound queue. The
// registration ends with the hub.
func observeHub(h *live.Hub) (metric.Registration, error) {
	open, err1 := meter.Int64ObservableGauge("clopen.gateway.ws.connections",
		metric.WithDescription("WebSocket connections open now"), metric.WithUnit("{connection}"))
	dropped, err2 := meter.Int64ObservableCounter("clopen.gateway.ws.dropped",
		metric.WithDescription("WebSocket connections closed because the client fell behind (slow consumers)"), metric.WithUnit("{connection}"))
	depth, err3 := meter.Int64ObservableGauge("clopen.gateway.ws.queue.max_depth",
		metric.WithDescription("the deepest any connection's outbound queue has been"), metric.WithUnit("{frame}"))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("websocket metrics: %w", err)
	}
	return meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := h.Stats()
		o.ObserveInt64(open, st.Open)
		o.ObserveInt64(dropped, st.SlowConsumers)
		o.ObserveInt64(depth, st.MaxQueueDepth)
		return nil
	}, open, dropped, depth)
}
