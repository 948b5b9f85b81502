package artifacts

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// DeclareBuckets creates or updates the bucket artifacts owns: artifact_rev,
// tenant -> revision (decimal). Workers watch it and retire the engine
// instances of a tenant whose artifacts changed; only the latest value
// matters, so history is 1.
func DeclareBuckets(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: events.BucketArtifactRev,
		Description: "tenant -> artifact revision", History: 1, Storage: jetstream.FileStorage, Replicas: max(replicas, 1)})
	if err != nil {
		return nil, fmt.Errorf("declare bucket %s: %w", events.BucketArtifactRev, err)
	}
	return kv, nil
}
