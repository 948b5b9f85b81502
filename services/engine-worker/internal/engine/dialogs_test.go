package engine

import (
	"context"
	"errors"
	"testing"
)

func TestDialogs(t *testing.T) {
	d := NewDialogs[string](context.Background())
	d.Go(d.Context(), func(context.Context) string { return "allow" })
	if got := <-d.Answers(); got != "allow" {
		t.Fatalf("answer = %q, want allow", got)
	}
	// A dialog nobody answers ends when the turn does, its cause
	// ErrTurnOver, and Stop waits for it.
	var cause error
	d.Go(d.Context(), func(ctx context.Context) string {
		<-ctx.Done()
		cause = context.Cause(ctx)
		return "late"
	})
	d.Stop()
	if !errors.Is(cause, ErrTurnOver) {
		t.Errorf("cause after Stop = %v, want ErrTurnOver", cause)
	}
}

func TestDialogsCancel(t *testing.T) {
	d := NewDialogs[string](context.Background())
	var cause error
	d.Go(d.Context(), func(ctx context.Context) string {
		<-ctx.Done()
		cause = context.Cause(ctx)
		return ""
	})
	d.Cancel(ErrInterrupted)
	d.Stop()
	if !errors.Is(cause, ErrInterrupted) {
		t.Errorf("cause = %v, want the one Cancel gave, ErrInterrupted", cause)
	}
}
