package privatepg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// initdb creates the cluster with the superuser clopen, trusting local and
// loopback connections. Locale C.UTF-8 where the C library has it, else C.
func initdb(ctx context.Context, bin, pgdata string, cred *syscall.Credential, log *slog.Logger) error {
	run := func(locale string) ([]byte, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(bin, "initdb"), "-D", pgdata,
			"--username=clopen", "--auth=trust", "-E", "UTF8", "--locale="+locale)
		cmd.Dir = pgdata
		cmd.SysProcAttr = sysProcAttr(cred)
		return cmd.CombinedOutput()
	}
	out, err := run("C.UTF-8")
	if err != nil && bytes.Contains(out, []byte("locale")) {
		log.Info("locale C.UTF-8 unavailable; initialising with C")
		out, err = run("C")
	}
	if err != nil {
		return fmt.Errorf("initdb %s: %w\n%s", pgdata, err, lastLines(out, 20))
	}
	return nil
}

var errAddrInUse = errors.New("address already in use")

// launch execs the postmaster on c.port and waits until it accepts
// connections on its socket in Dir/run, which no other server can answer.
// Settings given with -c override postgresql.conf: listening on loopback
// only is not negotiable, and the dev sizing stays honest (fsync on).
func (c *Cluster) launch(ctx context.Context, bin string, cred *syscall.Credential) error {
	logPath := filepath.Join(c.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open %s: %w", logPath, err)
	}
	defer logf.Close() // the child holds its own descriptor
	fi, err := logf.Stat()
	if err != nil {
		return fmt.Errorf("stat %s: %w", logPath, err)
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", c.pgdata, "-p", strconv.Itoa(c.port),
		"-k", quoteDir(filepath.Join(c.dir, "run")), "-c", "listen_addresses=127.0.0.1",
		"-c", "max_connections=200", "-c", "shared_buffers=128MB", "-c", "fsync=on")
	cmd.Dir = c.pgdata
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(cred)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	c.pid, c.exited = cmd.Process.Pid, make(chan struct{})
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	err = c.waitReady(ctx)
	if err == nil {
		return nil
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel() // skip the fast-shutdown grace: this server never served
	_ = c.kill(cancelled)
	tail := logSince(logPath, fi.Size())
	if strings.Contains(tail, "Address already in use") {
		err = fmt.Errorf("%w: port %d", errAddrInUse, c.port)
	}
	return fmt.Errorf("start postgres on port %d: %w\n%s", c.port, err, tail)
}

// waitReady polls until the server accepts a connection, it exits, or
// readyTimeout passes.
func (c *Cluster) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		conn, err := c.connect(ctx, "postgres")
		if err == nil {
			return conn.Close(ctx)
		}
		select {
		case <-c.exited:
			return fmt.Errorf("postgres exited: %v", c.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("wait for postgres (up to %v): %w; last attempt: %v", readyTimeout, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// ensureDatabase creates the database clopen unless it exists.
func (c *Cluster) ensureDatabase(ctx context.Context) error {
	conn, err := c.connect(ctx, "postgres")
	if err != nil {
		return fmt.Errorf("connect postgres: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = 'clopen')").Scan(&exists); err != nil {
		return fmt.Errorf("look up database clopen: %w", err)
	}
	if !exists {
		if _, err := conn.Exec(ctx, "CREATE DATABASE clopen"); err != nil {
			return fmt.Errorf("create database clopen: %w", err)
		}
	}
	return nil
}

// connect opens db over the cluster's own Unix socket. The socket directory
// is set after parsing: a connection string would split it at commas.
func (c *Cluster) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig("postgres://clopen@/" + db + "?sslmode=disable")
	if err != nil {
		return nil, err
	}
	cfg.Host, cfg.Port, cfg.Fallbacks = filepath.Join(c.dir, "run"), uint16(c.port), nil
	return pgx.ConnectConfig(ctx, cfg)
}

// quoteDir protects a directory in postgres's comma-separated list syntax.
func quoteDir(dir string) string {
	return `"` + strings.ReplaceAll(dir, `"`, `""`) + `"`
}

// freePort asks the kernel for a free loopback port. Another process may
// take it before postgres binds it; Start retries then.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pick a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// logSince returns the last lines written to the log after offset.
func logSince(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || offset > int64(len(b)) {
		return ""
	}
	return lastLines(b[offset:], 20)
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
