// Package embeddednats runs a NATS server with JetStream inside the calling
// process: the zero-setup default of `clopen dev` and the real broker of every
// integration test.
package embeddednats

import (
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Config says where the embedded server listens and keeps its data.
type Config struct {
	// StoreDir holds the JetStream file store. Required: data survives a
	// restart of the server when the same directory is given again.
	StoreDir string
	// Host defaults to 127.0.0.1: the embedded server is never exposed.
	Host string
	// Port 0 means server.RANDOM_PORT.
	Port int
	// ServerName defaults to "clopen".
	ServerName string
	// SyncAlways makes JetStream fsync before it acknowledges a publish
	// (slower; survives an OS crash, not just a process crash).
	SyncAlways bool
	// Cluster, when set, joins this server to a JetStream cluster.
	Cluster *ClusterConfig
	// Users, when set, are the only identities the server accepts, each
	// with its permissions (busauth.Users); nil leaves the server open.
	Users []*server.User
}

// ClusterConfig joins an embedded server to others for R3 streams in tests.
type ClusterConfig struct {
	Name   string
	Port   int      // cluster listen port on Host
	Routes []string // nats-route://host:port of the other nodes
}

// Start runs a server and waits until it accepts client connections.
// The caller owns it: Shutdown then WaitForShutdown stop it.
func Start(cfg Config) (*server.Server, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("embedded nats: StoreDir is required")
	}
	opts := &server.Options{
		ServerName:         cfg.ServerName,
		Host:               cfg.Host,
		Port:               cfg.Port,
		JetStream:          true,
		StoreDir:           cfg.StoreDir,
		NoSigs:             true,
		NoLog:              true,
		MaxPayload:         8 << 20,
		JetStreamMaxMemory: 256 << 20,
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = server.RANDOM_PORT
	}
	if opts.ServerName == "" {
		opts.ServerName = "clopen"
	}
	if cfg.Users != nil {
		opts.Users = cfg.Users
	}
	if cfg.SyncAlways {
		opts.SyncAlways = true
	}
	if c := cfg.Cluster; c != nil {
		opts.Cluster = server.ClusterOpts{Name: c.Name, Host: opts.Host, Port: c.Port}
		for _, r := range c.Routes {
			u := server.RoutesFromStr(r)
			if len(u) == 0 {
				return nil, fmt.Errorf("embedded nats: bad route %q", r)
			}
			opts.Routes = append(opts.Routes, u...)
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("embedded nats: not ready for connections after 10s")
	}
	return ns, nil
}
