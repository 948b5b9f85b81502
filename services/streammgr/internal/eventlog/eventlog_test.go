package eventlog_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/streammgr"
	"clopen.dev/services/streammgr/internal/eventlog"
)

func events(run string, epoch int64, from, n int) []eventlog.Event {
	evs := make([]eventlog.Event, n)
	for i := range evs {
		seq := int64(from + i)
		evs[i] = eventlog.Event{
			Key:     eventlog.Key{Run: run, Epoch: epoch, Seq: seq},
			JSSeq:   1000 + seq,
			Type:    "stream_event",
			Payload: fmt.Appendf(nil, `{"type":"stream_event","event":"delta","text":"t%d"}`, seq),
		}
	}
	return evs
}

func TestAppendStoresDuplicatesOnce(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, streammgr.Schema)
	run := uuid.NewString()

	got, err := eventlog.Append(ctx, db, events(run, 1, 1, 10))
	if err != nil || len(got) != 10 {
		t.Fatalf("first Append = %d new, %v; want 10", len(got), err)
	}
	// A redelivery overlapping the first batch: 5..14, of which 11..14 are new.
	got, err = eventlog.Append(ctx, db, events(run, 1, 5, 10))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || !got[eventlog.Key{Run: run, Epoch: 1, Seq: 11}] || got[eventlog.Key{Run: run, Epoch: 1, Seq: 5}] {
		t.Fatalf("overlapping Append new keys = %v, want seq 11..14 only", got)
	}
	all, err := eventlog.ReadAll(ctx, db, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 14 {
		t.Fatalf("stored %d events, want 14", len(all))
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) || ev.JSSeq != 1000+ev.Seq || !strings.Contains(string(ev.Payload), fmt.Sprintf(`"t%d"`, ev.Seq)) {
			t.Fatalf("event %d = %+v, want seq %d with its payload", i, ev.Key, i+1)
		}
	}
}

// countingTracer counts the statements sent on a pool.
type countingTracer struct{ n atomic.Int64 }

func (c *countingTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *countingTracer) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func TestAppendThousandRowsInOneStatement(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	setup, err := pgdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer setup.Close()
	if _, err := pgdb.Migrate(ctx, setup, streammgr.Schema, nil); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	tracer := &countingTracer{}
	cfg.ConnConfig.Tracer = tracer
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	run := uuid.NewString()
	got, err := eventlog.Append(ctx, db, events(run, 1, 1, eventlog.MaxBatch))
	if err != nil || len(got) != eventlog.MaxBatch {
		t.Fatalf("Append(1000) = %d new, %v", len(got), err)
	}
	if n := tracer.n.Load(); n != 1 {
		t.Errorf("Append(1000) sent %d statements, want 1", n)
	}
	all, err := eventlog.ReadAll(ctx, db, run)
	if err != nil || len(all) != eventlog.MaxBatch {
		t.Fatalf("ReadAll = %d, %v", len(all), err)
	}
	if _, err := eventlog.Append(ctx, db, events(run, 1, 1, eventlog.MaxBatch+1)); !errors.Is(err, eventlog.ErrBatchTooLarge) {
		t.Errorf("Append(1001) err = %v, want ErrBatchTooLarge", err)
	}
}

func TestReadOrdersBySeqAcrossEpochsAndPages(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t, streammgr.Schema)
	run, other := uuid.NewString(), uuid.NewString()
	// Inserted out of order, across two epochs and another run.
	batch := append(events(run, 2, 1, 3), events(run, 1, 4, 3)...)
	batch = append(batch, events(run, 1, 1, 3)...)
	batch = append(batch, events(other, 1, 1, 5)...)
	batch = append(batch, eventlog.Event{Key: eventlog.Key{Run: run, Epoch: 0, Seq: 1}, Type: "user", Payload: []byte(`{"type":"user"}`)})
	if _, err := eventlog.Append(ctx, db, batch); err != nil {
		t.Fatal(err)
	}
	all, err := eventlog.ReadAll(ctx, db, run)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range all {
		got = append(got, fmt.Sprintf("%d/%d", ev.Epoch, ev.Seq))
	}
	want := "0/1 1/1 1/2 1/3 1/4 1/5 1/6 2/1 2/2 2/3"
	if strings.Join(got, " ") != want {
		t.Errorf("order = %s, want %s", strings.Join(got, " "), want)
	}
	if all[0].JSSeq != 0 {
		t.Errorf("directly written event JSSeq = %d, want 0 (null)", all[0].JSSeq)
	}
	page, err := eventlog.Read(ctx, db, eventlog.Key{Run: run, Epoch: 1, Seq: 5}, 2)
	if err != nil || len(page) != 2 || page[0].Seq != 6 || page[1].Epoch != 2 {
		t.Errorf("Read after 1/5 limit 2 = %+v, %v; want 1/6, 2/1", page, err)
	}
}
