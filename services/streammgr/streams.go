package streammgr

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
)

// StreamSettings are the knobs of the streams streammgr owns that differ
// between a laptop and a cluster.
type StreamSettings struct {
	Replicas    int           // 1 embedded, 3 in production
	EventsAge   time.Duration // how long EVENTS keeps a run's events (Postgres keeps them forever)
	ChatAge     time.Duration // the client resume buffer
	EventsBytes int64         // guard against a runaway stream; -1 = unlimited
}

// DefaultStreamSettings are the values of ARCHITECTURE §2.
func DefaultStreamSettings() StreamSettings {
	return StreamSettings{Replicas: 1, EventsAge: 72 * time.Hour, ChatAge: 24 * time.Hour, EventsBytes: -1}
}

// DeclareStreams creates or updates the streams and buckets streammgr owns:
// EVENTS, CHAT, JOBS and the run_ctl bucket. It is idempotent and safe to run
// from several replicas at once.
func DeclareStreams(ctx context.Context, js jetstream.JetStream, s StreamSettings) error {
	if s.Replicas < 1 {
		s.Replicas = 1
	}
	streams := []jetstream.StreamConfig{
		{
			Name:        events.StreamEvents,
			Description: "every engine event of every run, in order; Postgres keeps the long-term record",
			Subjects:    []string{events.SubjectEventsAll},
			Retention:   jetstream.LimitsPolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      s.EventsAge,
			MaxBytes:    s.EventsBytes,
			Discard:     jetstream.DiscardOld,
			Duplicates:  2 * time.Minute,
			AllowDirect: true,
			Replicas:    s.Replicas,
		},
		{
			Name:        events.StreamChat,
			Description: "chat events routed for clients; the resume buffer",
			// Each joined WebSocket client reads through its own consumer; the
			// server's default cap of 1,000 per stream would refuse the 1,001st.
			MaxConsumers: 1_000_000,
			Subjects:     []string{events.SubjectChatAll},
			Retention:    jetstream.LimitsPolicy,
			Storage:      jetstream.FileStorage,
			MaxAge:       s.ChatAge,
			Discard:      jetstream.DiscardOld,
			Duplicates:   2 * time.Minute,
			AllowDirect:  true,
			Replicas:     s.Replicas,
		},
		{
			Name:        events.StreamJobs,
			Description: "turns waiting for a worker that has the engine",
			Subjects:    []string{events.SubjectJobsAll},
			Retention:   jetstream.WorkQueuePolicy,
			Storage:     jetstream.FileStorage,
			MaxAge:      24 * time.Hour,
			Duplicates:  2 * time.Minute,
			Replicas:    s.Replicas,
		},
	}
	for _, cfg := range streams {
		if _, err := js.CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("declare stream %s: %w", cfg.Name, err)
		}
	}
	_, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      events.BucketRunCtl,
		Description: "durable cancel/interrupt flags for runs whose owner could not be reached",
		History:     1,
		TTL:         7 * 24 * time.Hour,
		Storage:     jetstream.FileStorage,
		Replicas:    s.Replicas,
	})
	if err != nil {
		return fmt.Errorf("declare bucket %s: %w", events.BucketRunCtl, err)
	}
	return nil
}
