package engine

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRPC runs a shell that answers request 1, says something unasked
// and writes a line that does not decode, then exits.
func TestRPC(t *testing.T) {
	closed := errors.New("closed")
	wire := RPCWire[string, string]{Closed: closed,
		Decode: func(line []byte) (string, error) {
			if !strings.HasPrefix(string(line), "msg ") {
				return "", errors.New("not a message")
			}
			return strings.TrimSpace(strings.TrimPrefix(string(line), "msg ")), nil
		},
		Response: func(m string) (string, bool) {
			id, ok := strings.CutPrefix(m, "re:")
			return strings.SplitN(id, " ", 2)[0], ok
		}}
	r, err := StartRPC(ChildSpec{Argv: []string{"sh", "-c", `read -r req; echo "msg note"; echo garbage; echo "msg re:$req done"; read -r never`},
		Env: os.Environ(), Dir: t.TempDir(), Grace: time.Second}, wire)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop(context.Background())
	if id := r.NextID(); id != 1 {
		t.Errorf("NextID = %d, want 1", id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := r.Call(ctx, "1", func() error { return r.Send(1) })
	if err != nil || got != "re:1 done" {
		t.Fatalf("Call = %q, %v; want the response to 1", got, err)
	}
	if items, _ := r.Queue.Drain(); len(items) != 1 || items[0] != "note" {
		t.Errorf("queue = %q, want the unasked message alone", items)
	}
	r.Stop(context.Background())
	if _, err := r.Call(ctx, "2", func() error { return nil }); !errors.Is(err, closed) {
		t.Errorf("Call after the child ended = %v, want the wire's Closed", err)
	}
}
