package engine

import (
	"context"
	"sync/atomic"
)

// RPC is a child that speaks requests and responses in lines (Codex's
// app-server, pi's RPC mode): each stdout line is decoded; a response goes
// to the call waiting for its id, and anything else (notifications,
// events, the CLI's own requests) to Queue, which the turn in progress
// drains. Lines that do not decode are dropped: CLIs log there too. Call
// and NextID are safe for concurrent use.
type RPC[K comparable, M any] struct {
	*Child
	Queue *Queue[M]

	wire   RPCWire[K, M]
	calls  Calls[K, M]
	nextID atomic.Int64
}

// RPCWire is how an RPC child's lines read.
type RPCWire[K comparable, M any] struct {
	Decode func(line []byte) (M, error)
	// Response is the id of a response; ok is false for any other message.
	Response func(M) (id K, ok bool)
	// Closed fails the calls in flight once the child's output is closed.
	Closed error
}

// StartRPC starts spec's child (its Line and Closed are the RPC's own).
func StartRPC[K comparable, M any](spec ChildSpec, wire RPCWire[K, M]) (*RPC[K, M], error) {
	r := &RPC[K, M]{Queue: NewQueue[M](), wire: wire}
	spec.Line, spec.Closed = r.route, r.Queue.Close
	child, err := StartChild(spec)
	if err != nil {
		return nil, err
	}
	r.Child = child
	return r, nil
}

func (r *RPC[K, M]) route(line []byte) {
	m, err := r.wire.Decode(line)
	if err != nil {
		return
	}
	if id, ok := r.wire.Response(m); ok {
		r.calls.Deliver(id, m)
		return
	}
	r.Queue.Push(m)
}

// NextID numbers requests: 1, 2, … for the child's life.
func (r *RPC[K, M]) NextID() int64 { return r.nextID.Add(1) }

// Call runs send, which writes the request id, and waits for its response
// until the child is gone (the error is the wire's Closed) or ctx ends.
func (r *RPC[K, M]) Call(ctx context.Context, id K, send func() error) (M, error) {
	return r.calls.Call(ctx, id, r.Done(), r.wire.Closed, send)
}
