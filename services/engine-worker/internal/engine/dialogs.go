package engine

import (
	"context"
	"errors"
	"sync"
)

// ErrTurnOver is the cancel cause of the dialogs still being decided when
// their turn ends.
var ErrTurnOver = errors.New("turn over")

// Dialogs decides a turn's dialogs (permission prompts, questions) off the
// turn's loop, which reads the answers (of type A) from Answers and writes
// them back to the CLI. Each dialog is decided in its own goroutine, so a
// user taking their time holds up neither the stream nor an interrupt.
// The turn that made it calls Stop before it returns.
type Dialogs[A any] struct {
	ctx     context.Context
	stop    context.CancelCauseFunc
	wg      sync.WaitGroup
	answers chan A
}

// NewDialogs is the dialogs of a turn running under ctx.
func NewDialogs[A any](ctx context.Context) *Dialogs[A] {
	d := &Dialogs[A]{answers: make(chan A, 8)}
	d.ctx, d.stop = context.WithCancelCause(ctx)
	return d
}

// Context is the turn's context until Stop; the turn's handlers decide
// under it, so Stop ends what they left waiting.
func (d *Dialogs[A]) Context() context.Context { return d.ctx }

// Answers is where decided dialogs arrive.
func (d *Dialogs[A]) Answers() <-chan A { return d.answers }

// Go runs decide in a goroutine and sends its answer, unless ctx ends
// first.
func (d *Dialogs[A]) Go(ctx context.Context, decide func(context.Context) A) {
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		a := decide(ctx)
		select {
		case d.answers <- a:
		case <-ctx.Done():
		}
	}()
}

// Cancel ends the dialogs still being decided, with cause; it does not
// wait for them.
func (d *Dialogs[A]) Cancel(cause error) { d.stop(cause) }

// Stop cancels the dialogs still being decided, with ErrTurnOver unless
// Cancel gave a cause before, and waits for their goroutines.
func (d *Dialogs[A]) Stop() {
	d.stop(ErrTurnOver)
	d.wg.Wait()
}
