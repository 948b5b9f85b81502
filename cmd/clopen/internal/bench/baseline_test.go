package bench

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/pgtest"
)

func TestBaselinesMeasureSomething(t *testing.T) {
	ctx := context.Background()
	ns := natstest.Start(t)
	rate, lat, err := JetStreamBaseline(ctx, ns.ClientURL(), 5000, 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rate <= 0 || lat.N != 5000 || lat.P50 <= 0 || lat.P99 < lat.P50 {
		t.Errorf("jetstream baseline = %.0f msg/s, %+v", rate, lat)
	}
	pool, err := pgdb.Open(ctx, pgtest.NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rows, blat, err := PostgresBaseline(ctx, pool, 5000, 1000, 200)
	if err != nil {
		t.Fatal(err)
	}
	if rows <= 0 || blat.N != 5 {
		t.Errorf("postgres baseline = %.0f rows/s, %+v", rows, blat)
	}
	t.Logf("jetstream %.0f msg/s (p50 %.2f ms), postgres %.0f rows/s", rate, lat.P50, rows)
}

// TestBeyondMakesAnInfiniteQuantileEncodable: a p99 past the highest bucket
// is reported as that bound plus a flag, which JSON can carry (+Inf cannot).
func TestBeyondMakesAnInfiniteQuantileEncodable(t *testing.T) {
	before := map[float64]float64{0.1: 0, 1: 0, 5: 0, math.Inf(1): 0}
	after := map[float64]float64{0.1: 1, 1: 1, 5: 1, math.Inf(1): 100}
	q := Quantile(before, after, 0.99)
	if !math.IsInf(q, 1) {
		t.Fatalf("Quantile = %v, want +Inf (99 of 100 observations above 5)", q)
	}
	bound, over := Beyond(q, after)
	if bound != 5 || !over {
		t.Errorf("Beyond = %v, %v; want 5, true", bound, over)
	}
	if b, o := Beyond(1, after); b != 1 || o {
		t.Errorf("Beyond(1) = %v, %v; want 1, false", b, o)
	}
	r := StreamResult{CommitLagP99Ms: bound * 1000, CommitLagP99Over: over}
	if _, err := json.Marshal(r); err != nil {
		t.Errorf("the result does not encode: %v", err)
	}
}
