// Package natstest starts a real embedded NATS server with JetStream for a
// test and connects clients to it.
package natstest

import (
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
