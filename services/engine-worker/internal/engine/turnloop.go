package engine

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// TurnLoop relays one turn of a process whose output lines queue (items
// of type M) and whose dialogs are decided off the loop (answers of type
// A), until the turn ends: the loop Codex and pi share. A cancel of ctx
// with ErrInterrupted interrupts the turn and waits InterruptGrace for the
// CLI to end it; any other cancel interrupts it and stops the process after
// CancelGrace, nothing more going out meanwhile.
type TurnLoop[M, A any] struct {
	Child   *Child
	Queue   *Queue[M]
	Answers <-chan A
	Log     *slog.Logger
	// Stuck is logged when an interrupted turn's grace ran out and the
	// process was stopped.
	Stuck string

	InterruptGrace, CancelGrace time.Duration

	// Handle handles one item; ended is true once the turn has ended, with
	// err its outcome. An error without the end fails the turn.
	Handle func(M) (ended bool, err error)
	// EndsCancelled, when set, says whether an item that arrives after a
	// cancel is the turn's end (the process is then stopped at once);
	// without it the grace runs out.
	EndsCancelled func(M) bool
	// Answer writes a decided dialog back; cancelled says a cancel is under
	// way. An error fails the turn.
	Answer func(a A, cancelled bool) error
	// Interrupt asks the CLI to stop the turn.
	Interrupt func()
	// Interrupted is the turn's end when the CLI did not end an interrupted
	// turn itself (it died, or the grace ran out).
	Interrupted func() error
	// Died is the turn's end when the process died in a turn nobody stopped.
	Died func() error
}

// Run runs the loop. reusable is true when the CLI ended the turn itself
// and its process may take the chat's next one.
func (l *TurnLoop[M, A]) Run(ctx context.Context) (reusable bool, err error) {
	done := ctx.Done()
	var deadline <-chan time.Time
	cancelled := false
	for {
		items, closed := l.Queue.Drain()
		if closed {
			switch {
			case cancelled:
				return false, context.Cause(ctx)
			case done == nil: // interrupted, and the process died instead of ending the turn
				return false, l.Interrupted()
			}
			return false, l.Died()
		}
		for _, it := range items {
			if cancelled { // nothing more goes out; wait for the turn's end
				if l.EndsCancelled != nil && l.EndsCancelled(it) {
					l.Child.Stop(context.Background())
					return false, context.Cause(ctx)
				}
				continue
			}
			if ended, err := l.Handle(it); ended || err != nil {
				return ended, err
			}
		}
		if len(items) > 0 {
			continue
		}
		select {
		case <-l.Queue.Notify():
		case a := <-l.Answers:
			if err := l.Answer(a, cancelled); err != nil {
				return false, err
			}
		case <-done:
			done = nil
			l.Interrupt()
			if !errors.Is(context.Cause(ctx), ErrInterrupted) {
				// Cancel: the interrupt lets the CLI close the turn in its
				// session for a short grace; then the group is stopped.
				cancelled = true
				deadline = time.After(l.CancelGrace)
				continue
			}
			deadline = time.After(l.InterruptGrace)
		case <-deadline:
			l.Child.Stop(context.Background())
			if cancelled {
				return false, context.Cause(ctx)
			}
			l.Log.Warn(l.Stuck)
			return false, l.Interrupted()
		}
	}
}
