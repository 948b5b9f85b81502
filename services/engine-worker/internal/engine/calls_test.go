package engine

import (
	"context"
	"errors"
	"testing"
)

func TestCalls(t *testing.T) {
	var c Calls[int, string]
	got, err := c.Call(context.Background(), 1, nil, nil, func() error {
		c.Deliver(2, "not mine")
		c.Deliver(1, "answer")
		return nil
	})
	if err != nil || got != "answer" {
		t.Fatalf("Call = %q, %v", got, err)
	}
	c.Deliver(1, "late") // nobody waits: dropped, never blocks
	gone, closed := make(chan struct{}), errors.New("closed")
	close(gone)
	if _, err := c.Call(context.Background(), 3, gone, closed, func() error { return nil }); err != closed {
		t.Fatalf("Call on a gone child = %v", err)
	}
	sendErr := errors.New("broken pipe")
	if _, err := c.Call(context.Background(), 4, nil, closed, func() error { return sendErr }); err != sendErr {
		t.Fatalf("Call whose send failed = %v", err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("cancelled"))
	if _, err := c.Call(ctx, 5, nil, closed, func() error { return nil }); err == nil || err.Error() != "cancelled" {
		t.Fatalf("Call after cancel = %v", err)
	}
	if len(c.waiting) != 0 {
		t.Fatalf("%d calls left waiting", len(c.waiting))
	}
}
