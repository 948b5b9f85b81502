// Package natstest starts a real embedded NATS server with JetStream for a
// test and connects clients to it.
package natstest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"clopen.dev/pkg/platform/embeddednats"
)

// Start runs an embedded server on a random loopback port with its store in
// a temporary directory; it is shut down when the test ends.
func Start(t testing.TB) *server.Server {
	t.Helper()
	ns, err := embeddednats.Start(embeddednats.Config{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatalf("start nats: %v", err)
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return ns
}

// Connect opens a client connection to ns, closed when the test ends.
func Connect(t testing.TB, ns *server.Server) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(ns.ClientURL(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatalf("connect nats: %v", err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("jetstream: %v", err)
	}
	return nc, js
}

// ServiceReady says whether the micro service name lists its endpoints and
// the list has stopped growing. A micro service answers PING (and its first
// endpoint) before the rest of its endpoints are added, so a test that
// calls it right after start can meet "no responders".
func ServiceReady(nc *nats.Conn, name string) bool {
	count := func() int {
		msg, err := nc.Request("$SRV.INFO."+name, nil, time.Second)
		if err != nil {
			return -1
		}
		var info micro.Info
		if json.Unmarshal(msg.Data, &info) != nil {
			return -1
		}
		return len(info.Endpoints)
	}
	n := count()
	time.Sleep(50 * time.Millisecond)
	return n > 0 && count() == n
}
