package streammgr

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// progress is what the pipeline tells readiness about its work: whether it
// consumes EVENTS, and, per writer, how long the batch it is committing has
// been waiting and why its last attempt failed.
type progress struct {
	mu         sync.Mutex
	writers    []writerProgress
	consumer   jetstream.Consumer // nil while not consuming
	consumeErr error              // why not, once it stopped
}

type writerProgress struct {
	oldest time.Time // when the oldest event of the batch being committed was routed; zero while idle
	events int
	err    error // the last failed attempt at the batch; nil once it commits
}

func newProgress(writers int) *progress {
	return &progress{writers: make([]writerProgress, writers), consumeErr: errors.New("not started yet")}
}

// begin records that writer n started committing batch.
func (g *progress) begin(n int, batch []*write) {
	oldest := time.Now()
	for _, w := range batch {
		if !w.routed.IsZero() && w.routed.Before(oldest) {
			oldest = w.routed
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writers[n] = writerProgress{oldest: oldest, events: len(batch)}
}

// failed records writer n's last failed attempt (nil: it committed).
func (g *progress) failed(n int, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writers[n].err = err
}

// end records that writer n is done with its batch.
func (g *progress) end(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.writers[n] = writerProgress{}
}

// consuming records the consumer being read from, or nil and why not.
func (g *progress) consuming(c jetstream.Consumer, why error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.consumer, g.consumeErr = c, why
}

// check reports why the pipeline cannot do its work, or nil: EVENTS is not
// being consumed (the consumer is gone or unreachable), or a writer holds
// events routed longer than stallAfter ago and not yet committed (it is
// stuck retrying, waiting on a lock, or falling behind).
func (g *progress) check(ctx context.Context, stallAfter time.Duration) error {
	g.mu.Lock()
	c, why := g.consumer, g.consumeErr
	writers := append([]writerProgress(nil), g.writers...)
	g.mu.Unlock()
	now := time.Now()
	var errs []error
	for i, w := range writers {
		if lag := now.Sub(w.oldest); !w.oldest.IsZero() && lag > stallAfter {
			err := fmt.Errorf("event writer %d: %d events routed %s ago are not committed yet", i, w.events, lag.Round(time.Second))
			if w.err != nil {
				err = fmt.Errorf("%w (last attempt: %v)", err, w.err)
			}
			errs = append(errs, err)
		}
	}
	if c == nil {
		errs = append(errs, fmt.Errorf("not consuming EVENTS: %v", why))
	} else if _, err := c.Info(ctx); err != nil {
		errs = append(errs, fmt.Errorf("events consumer %s: %w", consumerName, err))
	}
	return errors.Join(errs...)
}
