package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"clopen.dev/services/gateway"
)

// A client that sends its request body too slowly is answered 408 after
// the read timeout, so it cannot hold a connection and a handler for good; a
// WebSocket, upgraded on a connection with the same timeouts, outlives
// them (the server clears a connection's deadlines when it is hijacked).
func TestHTTPTimeoutsSpareWebSockets(t *testing.T) {
	const timeout = 500 * time.Millisecond
	e := newEnv(t, func(c *gateway.Config) { c.ReadTimeout, c.WriteTimeout, c.IdleTimeout = timeout, 2*timeout, timeout })
	a := e.newTenant(t, "acme")
	ctx := context.Background()

	ws, err := a.member.c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/projects HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":", a.member.key)
	start := time.Now()
	ended := make(chan string, 1)
	go func() {
		status, _ := bufio.NewReader(conn).ReadString('\n') // the status line, or nothing once closed
		ended <- status
	}()
	trickle := time.NewTicker(100 * time.Millisecond)
	defer trickle.Stop()
	giveUp := time.After(10 * timeout)
	for waiting := true; waiting; {
		select {
		case status := <-ended:
			if !strings.Contains(status, " 408 ") {
				t.Errorf("a body that never arrives is answered %q, want 408", status)
			}
			waiting = false
		case <-trickle.C:
			_, _ = conn.Write([]byte(" ")) // a byte now and then, never the whole body
		case <-giveUp:
			t.Fatalf("a body trickling in is still being read after %v", time.Since(start))
		}
	}
	if took := time.Since(start); took < timeout {
		t.Errorf("the connection ended after %v, before the read timeout of %v", took, timeout)
	}

	time.Sleep(4 * timeout) // past every HTTP timeout
	if _, err := ws.Join(ctx, a.session.ID, nil); err != nil {
		t.Fatalf("a WebSocket open longer than the HTTP timeouts: %v", err)
	}
}
