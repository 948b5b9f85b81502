package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// LeaseTTL is how long a run's ownership lasts without renewal; workers renew
// every LeaseTTL/3.
const LeaseTTL = 15 * time.Second

// DeclareBuckets creates or updates the buckets the workers own: run_owner
// (leases; the revision is the run's epoch) and workers (heartbeats).
// Both age keys out after LeaseTTL, so a dead worker's leases and heartbeat
// vanish on their own; expiry leaves a delete marker that watchers see.
func DeclareBuckets(ctx context.Context, js jetstream.JetStream, replicas int) error {
	if replicas < 1 {
		replicas = 1
	}
	for _, cfg := range []jetstream.KeyValueConfig{
		{Bucket: events.BucketRunOwner, Description: "run -> owning worker and epoch", History: 1,
			TTL: LeaseTTL, LimitMarkerTTL: time.Minute, Storage: jetstream.FileStorage, Replicas: replicas},
		{Bucket: events.BucketWorkers, Description: "worker heartbeats: engines, versions, capacity, load", History: 1,
			TTL: LeaseTTL, LimitMarkerTTL: time.Minute, Storage: jetstream.MemoryStorage, Replicas: replicas},
	} {
		if _, err := js.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
			return fmt.Errorf("declare bucket %s: %w", cfg.Bucket, err)
		}
	}
	return nil
}
