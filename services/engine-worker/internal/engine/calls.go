package engine

import (
	"context"
	"sync"
)

// Calls matches a child's responses to the requests waiting for them, by
// id: the part of a request/response protocol on stdio that is not its
// wire format. The zero value is ready to use.
type Calls[K comparable, M any] struct {
	mu      sync.Mutex
	waiting map[K]chan M
}

// Call registers id, runs send (which writes the request) and waits for
// the response to id, until gone closes (the error is closed) or ctx ends.
func (c *Calls[K, M]) Call(ctx context.Context, id K, gone <-chan struct{}, closed error, send func() error) (M, error) {
	ch := make(chan M, 1)
	c.mu.Lock()
	if c.waiting == nil {
		c.waiting = map[K]chan M{}
	}
	c.waiting[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.waiting, id)
		c.mu.Unlock()
	}()
	var zero M
	if err := send(); err != nil {
		return zero, err
	}
	select {
	case m := <-ch:
		return m, nil
	case <-gone:
		return zero, closed
	case <-ctx.Done():
		return zero, context.Cause(ctx)
	}
}

// Deliver hands m to the call waiting for id; a response nobody waits for
// is dropped.
func (c *Calls[K, M]) Deliver(id K, m M) {
	c.mu.Lock()
	ch := c.waiting[id]
	delete(c.waiting, id)
	c.mu.Unlock()
	if ch != nil {
		ch <- m // buffered: never blocks
	}
}
