// Package natstrace carries W3C trace context in NATS message headers. NATS
// headers are case-sensitive and other clients use the lowercase W3C keys, so
// this carrier never canonicalises them the way http.Header does.
package natstrace

import (
	"context"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
)

// Carrier adapts nats.Header to propagation.TextMapCarrier.
type Carrier nats.Header

var _ propagation.TextMapCarrier = Carrier(nil)

// Get returns the first value of key.
func (c Carrier) Get(key string) string {
	if v := c[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Set replaces key's value.
func (c Carrier) Set(key, value string) { c[key] = []string{value} }

// Keys lists the header names.
func (c Carrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// Inject writes the span context of ctx into h (traceparent, tracestate).
func Inject(ctx context.Context, h nats.Header) {
	otel.GetTextMapPropagator().Inject(ctx, Carrier(h))
}

// Extract returns ctx carrying the remote span context found in h.
func Extract(ctx context.Context, h nats.Header) context.Context {
	return otel.GetTextMapPropagator().Extract(ctx, Carrier(h))
}

// Propagator is the W3C trace-context propagator every Clopen process installs.
func Propagator() propagation.TextMapPropagator {
	return propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
}
