package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natstest"
	worker "clopen.dev/services/engine-worker"
)

func TestDeclareBucketsLeaseSemantics(t *testing.T) {
	ctx := context.Background()
	_, js := natstest.Connect(t, natstest.Start(t))
	for range 2 {
		if err := worker.DeclareBuckets(ctx, js, 1); err != nil {
			t.Fatalf("DeclareBuckets: %v", err)
		}
	}
	owners, err := js.KeyValue(ctx, events.BucketRunOwner)
	if err != nil {
		t.Fatal(err)
	}
	st, err := owners.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.TTL() != worker.LeaseTTL {
		t.Errorf("run_owner TTL = %v, want %v", st.TTL(), worker.LeaseTTL)
	}
	// Create is put-if-absent: the second claimant loses.
	rev, err := owners.Create(ctx, "run1", []byte("w1"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := owners.Create(ctx, "run1", []byte("w2")); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Errorf("second Create err = %v, want ErrKeyExists", err)
	}
	// Update is compare-and-swap on the revision (the epoch).
	if _, err := owners.Update(ctx, "run1", []byte("w1"), rev+7); !errors.Is(err, jetstream.ErrKeyExists) {
		t.Errorf("stale Update err = %v, want a revision mismatch", err)
	}
	if _, err := owners.Update(ctx, "run1", []byte("w1"), rev); err != nil {
		t.Errorf("Update at current revision: %v", err)
	}
	if _, err := js.KeyValue(ctx, events.BucketWorkers); err != nil {
		t.Errorf("bucket workers: %v", err)
	}
}
