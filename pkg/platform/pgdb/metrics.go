package pgdb

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// ObservePool exports pool's statistics under the OpenTelemetry database
// client names: connections by state (used, idle) and the most allowed,
// with how many acquisitions there were, how many had to wait for a free
// connection, and the time spent waiting. name labels the pool (the
// service's). Unregister the result when the pool closes.
func ObservePool(pool *pgxpool.Pool, name string) (metric.Registration, error) {
	m := otel.Meter("clopen.dev/pkg/platform/pgdb")
	count, err1 := m.Int64ObservableUpDownCounter("db.client.connection.count",
		metric.WithDescription("connections in the pool, by state"), metric.WithUnit("{connection}"))
	most, err2 := m.Int64ObservableUpDownCounter("db.client.connection.max",
		metric.WithDescription("the most connections the pool opens"), metric.WithUnit("{connection}"))
	acquires, err3 := m.Int64ObservableCounter("clopen.db.pool.acquires",
		metric.WithDescription("connections taken from the pool"), metric.WithUnit("{acquire}"))
	waited, err4 := m.Int64ObservableCounter("clopen.db.pool.waits",
		metric.WithDescription("acquisitions that found no idle connection and waited"), metric.WithUnit("{acquire}"))
	waitTime, err5 := m.Float64ObservableCounter("clopen.db.pool.wait_time",
		metric.WithDescription("time spent acquiring connections"), metric.WithUnit("s"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, fmt.Errorf("pool metrics: %w", err)
	}
	pooled := attribute.String("db.client.connection.pool.name", name)
	used := metric.WithAttributes(pooled, attribute.String("db.client.connection.state", "used"))
	idle := metric.WithAttributes(pooled, attribute.String("db.client.connection.state", "idle"))
	only := metric.WithAttributes(pooled)
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := pool.Stat()
		o.ObserveInt64(count, int64(st.AcquiredConns()), used)
		o.ObserveInt64(count, int64(st.IdleConns()), idle)
		o.ObserveInt64(most, int64(st.MaxConns()), only)
		o.ObserveInt64(acquires, st.AcquireCount(), only)
		o.ObserveInt64(waited, st.EmptyAcquireCount(), only)
		o.ObserveFloat64(waitTime, st.AcquireDuration().Seconds(), only)
		return nil
	}, count, most, acquires, waited, waitTime)
}
