package privatepg

import (
	"bufio"
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
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestStartStopRestart(t *testing.T) {
	// Commas and quotes are separators in postgres's unix_socket_directories
	// and in pgx's host list; the missing components are Start's to create.
	dir := filepath.Join(clusterDir(t), `new, "odd" dir`, "pg")

	begin := time.Now()
	c := start(t, dir)
	t.Logf("first start (initdb): %v", time.Since(begin))
	if c.Dir() != dir {
		t.Fatalf("Dir() = %q, want %q", c.Dir(), dir)
	}
	exec1(t, c, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('hello')")
	stop(t, c)

	begin = time.Now()
	c = start(t, dir)
	t.Logf("warm restart: %v", time.Since(begin))
	if got := queryOne(t, c, "SELECT v FROM kept"); got != "hello" {
		t.Fatalf("after restart SELECT v = %q, want %q", got, "hello")
	}
	stop(t, c)
}

func TestStopIsIdempotent(t *testing.T) {
	dir := clusterDir(t)
	port := freeTestPort(t)
	c, err := Start(t.Context(), Config{Dir: dir, Port: port, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if want := fmt.Sprintf("postgres://clopen@127.0.0.1:%d/clopen?sslmode=disable", port); c.URL() != want {
		t.Fatalf("URL() = %q, want %q", c.URL(), want)
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Stop(t.Context()) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("concurrent Stop: %v", err)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("Stop after Stop: %v", err)
	}
	select {
	case <-c.Done():
	default:
		t.Fatal("Done() open after Stop")
	}
	assertNoProcesses(t, dir)
}

func TestStartOverStalePidFile(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{
			name: "postmaster of an earlier run still serving",
			setup: func(t *testing.T, dir string) {
				old := start(t, dir)
				t.Cleanup(func() {
					if !isClosed(old.Done()) {
						t.Error("the earlier postmaster survived the new Start")
					}
				})
			},
		},
		{
			name: "postmaster killed, children orphaned",
			setup: func(t *testing.T, dir string) {
				old := start(t, dir)
				if err := syscall.Kill(old.pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				<-old.Done()
			},
		},
		{
			name: "pid reused by an unrelated process",
			setup: func(t *testing.T, dir string) {
				stop(t, start(t, dir))
				sleep := exec.Command("sleep", "60")
				if err := sleep.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = sleep.Process.Kill(); _ = sleep.Wait() })
				pid := strconv.Itoa(sleep.Process.Pid) + "\n" + filepath.Join(dir, "pgdata") + "\n"
				if err := os.WriteFile(filepath.Join(dir, "pgdata", "postmaster.pid"), []byte(pid), 0o600); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := clusterDir(t)
			tt.setup(t, dir)
			if _, err := os.Stat(filepath.Join(dir, "pgdata", "postmaster.pid")); err != nil {
				t.Fatalf("setup left no postmaster.pid: %v", err)
			}
			c := start(t, dir)
			exec1(t, c, "CREATE TABLE t (v int)")
			stop(t, c)
		})
	}
}

func TestStartReportsPortInUse(t *testing.T) {
	dir := clusterDir(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = Start(t.Context(), Config{Dir: dir, Port: port, Logger: testLogger(t)})
	if !errors.Is(err, errAddrInUse) || !strings.Contains(err.Error(), "could not bind") {
		t.Fatalf("Start on a taken port = %v, want errAddrInUse quoting postgres.log", err)
	}
	assertNoProcesses(t, dir)
}

func TestStartAsRootFallsBackWhenDirUnreachable(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	needPostgres(t)
	dir := t.TempDir() // its parent is 0700 root: the postgres user cannot get in
	c := start(t, dir)
	t.Cleanup(func() { _ = os.RemoveAll(c.Dir()) })
	if c.Dir() == dir || !strings.HasPrefix(c.Dir(), filepath.Join(os.TempDir(), "clopen-pg-")) {
		t.Fatalf("Dir() = %q, want a fallback under %s", c.Dir(), os.TempDir())
	}
	exec1(t, c, "CREATE TABLE t (v int)")
	stop(t, c)
	if again := start(t, dir); again.Dir() != c.Dir() {
		t.Fatalf("second start Dir() = %q, want the same fallback %q", again.Dir(), c.Dir())
	}
}

func TestPostgresDiesWithKilledParent(t *testing.T) {
	dir := clusterDir(t)
	helper := exec.Command(os.Args[0], "-test.run=^TestHelperCluster$")
	helper.Env = append(os.Environ(), "PRIVATEPG_HELPER_DIR="+dir)
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if line != "ready\n" {
		_ = helper.Process.Kill()
		t.Fatalf("helper said %q, %v; want ready", line, err)
	}
	_ = helper.Process.Kill() // SIGKILL: clopen gets no chance to call Stop
	_ = helper.Wait()
	deadline := time.Now().Add(10 * time.Second)
	for len(serverProcs(filepath.Join(dir, "pgdata"))) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	assertNoProcesses(t, dir)
}

// TestHelperCluster is TestPostgresDiesWithKilledParent's clopen: it starts a
// cluster, says so, and waits to be killed.
func TestHelperCluster(t *testing.T) {
	dir := os.Getenv("PRIVATEPG_HELPER_DIR")
	if dir == "" {
		t.Skip("helper process, run by TestPostgresDiesWithKilledParent")
	}
	if _, err := Start(t.Context(), Config{Dir: dir}); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	time.Sleep(time.Minute)
}

// clusterDir returns a fresh directory the server can reach even when the
// test runs as root: t.TempDir's parent is 0700, so open it for traversal.
func clusterDir(t *testing.T) string {
	t.Helper()
	needPostgres(t)
	dir := t.TempDir()
	if err := os.Chmod(filepath.Dir(dir), 0o711); err != nil {
		t.Fatal(err)
	}
	return dir
}

// needPostgres skips the test when no server binaries are installed, except
// under CI=true, where it fails.
func needPostgres(t *testing.T) {
	t.Helper()
	if _, err := FindBinaries(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("under CI=true: %v", err)
		}
		t.Skipf("no postgres binaries: %v", err)
	}
}

func start(t *testing.T, dir string) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), Config{Dir: dir, Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// stop stops c, reports how long that took, and checks nothing is left.
func stop(t *testing.T, c *Cluster) {
	t.Helper()
	begin := time.Now()
	if err := c.Stop(t.Context()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	t.Logf("stop: %v", time.Since(begin))
	assertNoProcesses(t, c.Dir())
}

// assertNoProcesses fails if any process mentions dir on its command line
// (the postmaster's -D) or works inside it (every server child).
func assertNoProcesses(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() || !alive(pid) {
			continue
		}
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if strings.Contains(string(cmdline), dir) || strings.HasPrefix(cwd, dir+"/") {
			t.Errorf("process %d left behind: %q in %s", pid, strings.ReplaceAll(string(cmdline), "\x00", " "), cwd)
		}
	}
}

func exec1(t *testing.T, c *Cluster, sql string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", c.URL(), err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql); err != nil {
		t.Fatalf("exec %q: %v", sql, err)
	}
}

func queryOne(t *testing.T, c *Cluster, sql string) string {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.URL())
	if err != nil {
		t.Fatalf("connect %s: %v", c.URL(), err)
	}
	defer conn.Close(context.Background())
	var s string
	if err := conn.QueryRow(t.Context(), sql).Scan(&s); err != nil {
		t.Fatalf("query %q: %v", sql, err)
	}
	return s
}

func freeTestPort(t *testing.T) int {
	t.Helper()
	p, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}
