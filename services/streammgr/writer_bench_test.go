package streammgr

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/streammgr/internal/router"
	"clopen.dev/services/streammgr/internal/store"
)

// BenchmarkCommitSessionLocks measures what locking a batch's sessions
// costs the writer: batches of 500 text events over 50 sessions, appended
// to the event log in one transaction, with and without the session locks
// taken first, one after the other. It reports the median of each and
// their ratio:
//
//	go test -run '^$' -bench CommitSessionLocks -count 5 ./services/streammgr/
func BenchmarkCommitSessionLocks(b *testing.B) {
	const batchSize, sessions = 500, 50
	db := pgtest.New(b, Schema)
	ctx := context.Background()
	tenant, project := uuid.NewString(), uuid.NewString()
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = uuid.NewString()
		if _, err := db.Exec(ctx, `INSERT INTO streammgr.chat_sessions (id, tenant_id, project_id) VALUES ($1, $2, $3)`,
			ids[i], tenant, project); err != nil {
			b.Fatal(err)
		}
	}
	runs := make([]string, sessions)
	for i := range runs {
		runs[i] = uuid.NewString()
	}
	payload := []byte(`{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"012345"}}}`)
	var seq int
	batch := func() []*write {
		out := make([]*write, batchSize)
		for i := range out {
			seq++
			s := seq % sessions
			out[i] = &write{jsSeq: uint64(seq), run: runs[s], tenant: tenant, sess: ids[s], typ: "stream_event", body: payload,
				out: router.Outcome{Store: true, Epoch: 1, Seq: uint64(seq)}}
		}
		return out
	}
	commit := func(lock bool) time.Duration {
		w := batch()
		start := time.Now()
		err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
			if lock {
				if _, err := store.LockSessions(ctx, tx, sessionsOf(w)); err != nil {
					return err
				}
			}
			_, err := appendEvents(ctx, tx, w)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	// The arms alternate, so both see the same load on a shared machine.
	var plain, locked []time.Duration
	for i := 0; b.Loop(); i++ {
		if i%2 == 0 {
			plain, locked = append(plain, commit(false)), append(locked, commit(true))
		} else {
			locked, plain = append(locked, commit(true)), append(plain, commit(false))
		}
	}
	p, l := median(plain), median(locked)
	b.ReportMetric(float64(p.Microseconds())/1000, "ms/batch-plain")
	b.ReportMetric(float64(l.Microseconds())/1000, "ms/batch-locked")
	b.ReportMetric(float64(l)/float64(p), "locked/plain")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
