package bench

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Baseline is what the raw infrastructure does on this machine, measured
// in the same run as the pipeline.
type Baseline struct {
	JetStreamMsgsPerSec float64 `json:"jetstream_msgs_per_sec"`
	JetStreamLatency    Summary `json:"jetstream_publish_to_consume"`
	PostgresRowsPerSec  float64 `json:"postgres_rows_per_sec"`
	PostgresBatch       Summary `json:"postgres_batch_commit"`
}

// JetStreamBaseline publishes n messages of size bytes asynchronously with
// Msg-Ids over 100 subjects of a scratch file stream and consumes them with
// a durable pull consumer, acking each: the raw form of worker → streammgr.
// rate paces the publisher (messages per second); 0 publishes as fast as it
// can, which measures throughput, while latency is only meaningful paced.
func JetStreamBaseline(ctx context.Context, url string, n, size int, rate float64) (float64, Summary, error) {
	pub, err := nats.Connect(url)
	if err != nil {
		return 0, Summary{}, err
	}
	defer pub.Close()
	sub, err := nats.Connect(url)
	if err != nil {
		return 0, Summary{}, err
	}
	defer sub.Close()
	pjs, _ := jetstream.New(pub, jetstream.WithPublishAsyncMaxPending(4000))
	sjs, _ := jetstream.New(sub)
	name := "BENCH_BASELINE"
	_ = pjs.DeleteStream(ctx, name)
	s, err := pjs.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"benchbase.>"},
		Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute})
	if err != nil {
		return 0, Summary{}, err
	}
	defer func() { _ = pjs.DeleteStream(context.WithoutCancel(ctx), name) }()
	if _, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "base", AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 50_000}); err != nil {
		return 0, Summary{}, err
	}
	c, err := sjs.Consumer(ctx, name, "base") // consumed on its own connection
	if err != nil {
		return 0, Summary{}, err
	}
	var lat Latencies
	var got atomic.Int64
	done := make(chan struct{})
	cc, err := c.Consume(func(m jetstream.Msg) {
		sent := int64(binary.BigEndian.Uint64(m.Data()[:8]))
		lat.Add(time.Duration(time.Now().UnixNano() - sent))
		_ = m.Ack()
		if got.Add(1) == int64(n) {
			close(done)
		}
	}, jetstream.PullMaxMessages(2000))
	if err != nil {
		return 0, Summary{}, err
	}
	defer cc.Stop()
	payload := make([]byte, max(size, 8))
	began := time.Now()
	for i := range n {
		if rate > 0 {
			if wait := time.Until(began.Add(time.Duration(float64(i) / rate * float64(time.Second)))); wait > 0 {
				time.Sleep(wait)
			}
		}
		binary.BigEndian.PutUint64(payload[:8], uint64(time.Now().UnixNano()))
		msg := nats.NewMsg("benchbase.t." + strconv.Itoa(i%100))
		msg.Data = append([]byte(nil), payload...)
		msg.Header.Set("Nats-Msg-Id", "b:"+strconv.Itoa(i))
		for {
			_, err := pjs.PublishMsgAsync(msg)
			if err == nil {
				break
			}
			if !errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
				return 0, Summary{}, fmt.Errorf("publish: %w", err)
			}
			time.Sleep(time.Millisecond) // the async window is full: let acks drain
		}
	}
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		return 0, Summary{}, fmt.Errorf("consumed %d of %d", got.Load(), n)
	case <-ctx.Done():
		return 0, Summary{}, ctx.Err()
	}
	return float64(n) / time.Since(began).Seconds(), lat.Summary(), nil
}

// PostgresBaseline inserts rows shaped like run_events (about size bytes of
// JSON each) in batches of batch rows with the same unnest ... ON CONFLICT
// DO NOTHING statement the event log uses, into a scratch table.
func PostgresBaseline(ctx context.Context, pool *pgxpool.Pool, rows, batch, size int) (float64, Summary, error) {
	table := "bench_baseline_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if _, err := pool.Exec(ctx, `CREATE TABLE `+table+` (run_id uuid, epoch bigint, seq bigint, js_seq bigint,
		type text, payload jsonb, created_at timestamptz DEFAULT now(), PRIMARY KEY (run_id, epoch, seq))`); err != nil {
		return 0, Summary{}, err
	}
	defer func() { _, _ = pool.Exec(context.WithoutCancel(ctx), `DROP TABLE `+table) }()
	payload := `{"type":"stream_event","event":"delta","sessionId":"s","text":"` + string(make([]byte, 0)) + pad(size-60) + `"}`
	var lat Latencies
	runs := make([]string, 100)
	for i := range runs {
		runs[i] = uuid.NewString()
	}
	began := time.Now()
	for done := 0; done < rows; done += batch {
		n := min(batch, rows-done)
		r, e, sq, j, ty, p := make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]string, n), make([]string, n)
		for i := range n {
			k := done + i
			r[i], e[i], sq[i], j[i], ty[i], p[i] = runs[k%100], 1, int64(k), int64(k), "stream_event", payload
		}
		t := time.Now()
		_, err := pool.Exec(ctx, `INSERT INTO `+table+` (run_id, epoch, seq, js_seq, type, payload)
			SELECT r::uuid, e, s, j, t, p::jsonb FROM unnest($1::text[], $2::int8[], $3::int8[], $4::int8[], $5::text[], $6::text[])
			AS u(r, e, s, j, t, p) ON CONFLICT DO NOTHING`, r, e, sq, j, ty, p)
		if err != nil {
			return 0, Summary{}, err
		}
		lat.Add(time.Since(t))
	}
	return float64(rows) / time.Since(began).Seconds(), lat.Summary(), nil
}

func pad(n int) string {
	if n < 1 {
		return ""
	}
	b := make([]byte, n)
	for i := range b {
		b[i] = 'x'
	}
	return string(b)
}
