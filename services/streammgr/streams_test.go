package streammgr_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"clopen.dev/pkg/events"
	"clopen.dev/pkg/platform/natstest"
	"clopen.dev/services/streammgr"
)

func TestDeclareStreamsIsIdempotentWithDesignSettings(t *testing.T) {
	ctx := context.Background()
	_, js := natstest.Connect(t, natstest.Start(t))
	settings := streammgr.DefaultStreamSettings()
	for range 2 { // a second replica starting must not fail or change anything
		if err := streammgr.DeclareStreams(ctx, js, settings); err != nil {
			t.Fatalf("DeclareStreams: %v", err)
		}
	}
	tests := []struct {
		name      string
		subject   string
		retention jetstream.RetentionPolicy
		maxAge    time.Duration
	}{
		{events.StreamEvents, "ev.>", jetstream.LimitsPolicy, 72 * time.Hour},
		{events.StreamChat, "chat.>", jetstream.LimitsPolicy, 24 * time.Hour},
		{events.StreamJobs, "job.>", jetstream.WorkQueuePolicy, 24 * time.Hour},
	}
	for _, tt := range tests {
		s, err := js.Stream(ctx, tt.name)
		if err != nil {
			t.Fatalf("stream %s: %v", tt.name, err)
		}
		cfg := s.CachedInfo().Config
		if len(cfg.Subjects) != 1 || cfg.Subjects[0] != tt.subject {
			t.Errorf("%s subjects = %v, want [%s]", tt.name, cfg.Subjects, tt.subject)
		}
		if cfg.Retention != tt.retention || cfg.MaxAge != tt.maxAge || cfg.Storage != jetstream.FileStorage {
			t.Errorf("%s = retention %v age %v storage %v, want %v %v file", tt.name, cfg.Retention, cfg.MaxAge, cfg.Storage, tt.retention, tt.maxAge)
		}
		if cfg.Duplicates != 2*time.Minute {
			t.Errorf("%s duplicates window = %v, want 2m", tt.name, cfg.Duplicates)
		}
	}
	kv, err := js.KeyValue(ctx, events.BucketRunCtl)
	if err != nil {
		t.Fatalf("bucket run_ctl: %v", err)
	}
	if _, err := kv.Put(ctx, "run1", []byte("cancel")); err != nil {
		t.Errorf("run_ctl put: %v", err)
	}
}

func TestEventsStreamDropsDuplicateMsgID(t *testing.T) {
	ctx := context.Background()
	_, js := natstest.Connect(t, natstest.Start(t))
	if err := streammgr.DeclareStreams(ctx, js, streammgr.DefaultStreamSettings()); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		ack, err := js.Publish(ctx, "ev.t1.r1", []byte("x"), jetstream.WithMsgID("r1:1:1"))
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != (i > 0) {
			t.Errorf("publish %d duplicate = %v", i, ack.Duplicate)
		}
	}
	info, err := js.Stream(ctx, events.StreamEvents)
	if err != nil {
		t.Fatal(err)
	}
	if n := info.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("stream holds %d messages, want 1", n)
	}
}
