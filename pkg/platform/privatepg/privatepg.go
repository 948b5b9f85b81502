// Package privatepg runs a private PostgreSQL cluster for `clopen dev` from
// the locally installed server binaries: created on first start, reachable
// only on 127.0.0.1 with trust authentication as the superuser "clopen",
// and stopped, leaving no process behind, by Stop or by clopen's death.
//
// # Running as root
//
// The postmaster refuses to run as root, so a root clopen runs initdb and
// the server as an unprivileged account, switching credentials in the child
// (no sudo or su): the owner of an existing Dir/pgdata, else the postgres
// system user, else nobody. Dir/pgdata and Dir/run are created for and
// chowned to it; Dir, and any parents Start creates, get mode 0711 so it can
// pass through without listing them. Directories Start did not create are
// never chmodded: when one of them bars the way (the usual case is a data
// dir under /root, mode 0700), opening up /root would be the surprising,
// security-relevant change, so the cluster moves to a root-owned
// os.TempDir()/clopen-pg-<hash of Dir> instead, a Warn log says where, and
// Cluster.Dir reports it. That directory is stable across runs but goes
// when the temporary directory is cleaned (often at boot).
package privatepg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// readyTimeout bounds how long Start waits for the server to accept
// connections.
const readyTimeout = 30 * time.Second

// Config says where the cluster lives and how it listens.
type Config struct {
	// Dir holds the cluster: data in Dir/pgdata, sockets in Dir/run and the
	// server log in Dir/postgres.log. Required; created when missing. Data
	// persists across restarts on the same Dir.
	Dir string
	// Port is the TCP port on 127.0.0.1; 0 picks a free one.
	Port int
	// Logger receives lifecycle messages; nil discards them.
	Logger *slog.Logger
}

// Cluster is a running postmaster started by Start. The caller owns it and
// must call Stop. Its methods are safe for concurrent use.
type Cluster struct {
	dir, pgdata string
	port        int
	pid         int
	log         *slog.Logger
	exited      chan struct{} // closed once the postmaster is reaped
	waitErr     error         // its exit status, set before exited closes

	stopOnce sync.Once
	stopErr  error
}

// Start initialises the cluster if Dir/pgdata is empty, starts the
// postmaster and returns once it accepts connections and the database
// "clopen" exists. ctx bounds startup only, not the server's life. A
// postmaster already serving Dir is shut down first: one left by a crashed
// run, or another live clopen's, since two cannot share a Dir. Errors
// wrap ErrNoPostgres when the binaries are missing, and quote the end of
// postgres.log when the server does not come up within 30 s.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Dir == "" {
		return nil, errors.New("start postgres: Config.Dir is required")
	}
	begin := time.Now()
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	dir, cred, err := layout(cfg.Dir, log)
	if err != nil {
		return nil, fmt.Errorf("prepare %s: %w", cfg.Dir, err)
	}
	pgdata := filepath.Join(dir, "pgdata")
	if err := clearStale(ctx, pgdata, log); err != nil {
		return nil, err
	}
	_, err = os.Stat(filepath.Join(pgdata, "PG_VERSION"))
	fresh := errors.Is(err, fs.ErrNotExist)
	if fresh {
		if err := initdb(ctx, bin, pgdata, cred, log); err != nil {
			return nil, err
		}
	}
	var c *Cluster
	for attempt := 1; ; attempt++ {
		// A fresh Cluster per attempt: a failed attempt's Wait goroutine
		// keeps writing to its own.
		c = &Cluster{dir: dir, pgdata: pgdata, port: cfg.Port, log: log}
		if c.port == 0 {
			if c.port, err = freePort(); err != nil {
				return nil, err
			}
		}
		err = c.launch(ctx, bin, cred)
		if err == nil {
			break
		}
		if cfg.Port != 0 || attempt == 3 || !errors.Is(err, errAddrInUse) {
			return nil, err
		}
		log.Info("port taken before postgres bound it; retrying", "port", c.port)
	}
	if err := c.ensureDatabase(ctx); err != nil {
		_ = c.Stop(context.Background())
		return nil, err
	}
	log.Info("postgres ready", "dir", dir, "port", c.port, "initdb", fresh, "took", time.Since(begin))
	return c, nil
}

// URL returns the connection URL of the database "clopen".
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://clopen@127.0.0.1:%d/clopen?sslmode=disable", c.port)
}

// Port returns the TCP port the server listens on; starting again with it
// in Config.Port keeps URL the same across a restart.
func (c *Cluster) Port() int { return c.port }

// Dir returns the directory the cluster lives in: Config.Dir, or the
// temporary directory a root clopen fell back to (see the package doc).
func (c *Cluster) Dir() string { return c.dir }

// Done is closed when the postmaster has exited, whether by Stop or not.
func (c *Cluster) Done() <-chan struct{} { return c.exited }

// Stop shuts the server down fast (SIGINT: sessions are cut, data is
// checkpointed), escalating to SIGQUIT after 10 s or once ctx ends, then to
// SIGKILL; it returns once the postmaster and its children are gone. Later
// calls wait for the first and return its result. If the server had already
// exited on its own, the error says how.
func (c *Cluster) Stop(ctx context.Context) error {
	c.stopOnce.Do(func() {
		begin := time.Now()
		if isClosed(c.exited) && c.waitErr != nil {
			c.stopErr = fmt.Errorf("stop postgres: it had already exited: %w", c.waitErr)
		}
		c.stopErr = errors.Join(c.stopErr, c.kill(ctx))
		c.log.Info("postgres stopped", "dir", c.dir, "took", time.Since(begin))
	})
	return c.stopErr
}

// kill stops the postmaster unless it is gone (see terminate), then any
// orphaned children of a postmaster that had to be SIGKILLed.
func (c *Cluster) kill(ctx context.Context) error {
	if !isClosed(c.exited) {
		if err := terminate(ctx, c.pid, c.gone, c.log); err != nil {
			return err
		}
	}
	return killStrays(c.pgdata, c.log)
}

// gone is terminate's gone for our own child, which the Wait in launch reaps.
func (c *Cluster) gone(ctx context.Context, d time.Duration) bool {
	if isClosed(c.exited) {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
