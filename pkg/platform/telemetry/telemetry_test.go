package telemetry_test

import (
	"context"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"

	"clopen.dev/pkg/platform/telemetry"
)

func TestMetricsAreExposedForPrometheus(t *testing.T) {
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, "clopen-test", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	c, _ := otel.Meter("test").Int64Counter("clopen.test.things")
	c.Add(ctx, 3)
	rec := httptest.NewRecorder()
	tel.Metrics.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "clopen_test_things_total") || !strings.Contains(string(body), "go_goroutines") {
		t.Errorf("metrics lack the counter or the Go runtime:\n%.500s", body)
	}
	// A composite propagator's fields come from a set: their order varies.
	if !slices.Contains(otel.GetTextMapPropagator().Fields(), "traceparent") {
		t.Errorf("propagator fields = %v", otel.GetTextMapPropagator().Fields())
	}
}
