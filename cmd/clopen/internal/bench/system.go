package bench

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"clopen.dev/pkg/platform/bustoken"
	"clopen.dev/services/artifacts"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/gateway"
	bridge "clopen.dev/services/mcp-bridge"
	"clopen.dev/services/streammgr"
)

// proc is one Clopen process the benchmark started.
type proc struct {
	name  string
	cmd   *exec.Cmd
	admin string // host:port of its health and metrics listener ("" for nats)
}

// System is Clopen running as separate processes on this machine: NATS,
// streammgr, the gateway, artifacts, mcp-bridge and the engine workers.
type System struct {
	NATSURL string
	URL     string // gateway
	procs   []*proc
	logs    io.Writer
}

// SystemConfig says how to start the system.
type SystemConfig struct {
	Binary      string // the clopen binary
	Dir         string
	DatabaseURL string
	Workers     int
	WorkerEnv   []string // extra environment for workers (capacity, coalescing)
	Env         []string // extra environment for every service (telemetry)
	// MasterKey is artifacts' (base64); empty makes one. Systems started
	// one after another on one database must share it: artifacts refuses a
	// key other than the one the database's credentials are sealed with.
	MasterKey string
	Logs      io.Writer
}

// StartSystem starts every process and waits until each is ready.
func StartSystem(ctx context.Context, cfg SystemConfig) (*System, error) {
	s := &System{logs: cfg.Logs}
	natsPort, err := freePort()
	if err != nil {
		return nil, err
	}
	s.NATSURL = fmt.Sprintf("nats://127.0.0.1:%d", natsPort)
	if err := s.spawn("nats", cfg.Binary, []string{"nats", "--dir", filepath.Join(cfg.Dir, "nats"), "--port", strconv.Itoa(natsPort)}, nil, ""); err != nil {
		return nil, err
	}
	if err := waitTCP(ctx, fmt.Sprintf("127.0.0.1:%d", natsPort)); err != nil {
		s.Stop()
		return nil, fmt.Errorf("nats: %w", err)
	}
	httpPort, err := freePort()
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	base := []string{"CLOPEN_NATS_URL=" + s.NATSURL, "DATABASE_URL=" + cfg.DatabaseURL, "CLOPEN_LOG_LEVEL=" + cmp.Or(os.Getenv("CLOPEN_BENCH_LOG_LEVEL"), "error"),
		"CLOPEN_PPROF=" + os.Getenv("CLOPEN_PPROF")}
	base = append(base, cfg.Env...)
	type svc struct {
		name string
		env  []string
	}
	masterKey := cfg.MasterKey
	if masterKey == "" {
		masterKey = NewMasterKey()
	}
	// One tenant is the whole load: its admission limits are the fleet's.
	// The bus tokens' keys, each service only its own (as a deployment).
	keys := bustoken.Generate()
	services := []svc{
		{"streammgr", append(tokenEnv(keys, streammgr.TokenKeys), "CLOPEN_TENANT_MAX_CONCURRENT=10000", "CLOPEN_TENANT_MAX_QUEUED=100000")},
		{"artifacts", append(tokenEnv(keys, artifacts.TokenKeys), "CLOPEN_MASTER_KEY="+masterKey)}, {"mcp-bridge", append(tokenEnv(keys, bridge.TokenKeys), "CLOPEN_MCP_ADDR=127.0.0.1:0")},
		// One API key drives every simulated client: lift its rate limit.
		{"gateway", append(tokenEnv(keys, gateway.TokenKeys), fmt.Sprintf("CLOPEN_HTTP_ADDR=127.0.0.1:%d", httpPort),
			"CLOPEN_RATE_LIMIT=1000000", "CLOPEN_RATE_BURST=1000000", "CLOPEN_WS_MAX_PER_KEY=1000000", "CLOPEN_WS_MAX_PER_TENANT=1000000")}}
	for i := range max(cfg.Workers, 1) {
		// The runs are scripted: an empty engines dir keeps the worker from
		// checking (starting) every installed agent CLI while the baseline
		// and the first case are measured.
		env := append([]string{fmt.Sprintf("CLOPEN_WORKER_ID=bench-worker-%d", i),
			"CLOPEN_WORKSPACES=" + filepath.Join(cfg.Dir, "workspaces"),
			"CLOPEN_ENGINES_DIR=" + filepath.Join(cfg.Dir, "engines")}, append(tokenEnv(keys, worker.TokenKeys), cfg.WorkerEnv...)...)
		services = append(services, svc{"engine-worker", env})
	}
	for _, sv := range services {
		port, err := freePort()
		if err != nil {
			s.Stop()
			return nil, err
		}
		admin := fmt.Sprintf("127.0.0.1:%d", port)
		env := append(append(append([]string{}, base...), "CLOPEN_ADMIN_ADDR="+admin), sv.env...)
		if os.Getenv("CLOPEN_BENCH_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "%s admin http://%s\n", sv.name, admin)
		}
		if err := s.spawn(sv.name, cfg.Binary, []string{"serve", sv.name}, env, admin); err != nil {
			s.Stop()
			return nil, err
		}
	}
	for _, p := range s.procs {
		if p.admin == "" {
			continue
		}
		if err := waitReady(ctx, p.admin); err != nil {
			s.Stop()
			return nil, fmt.Errorf("%s not ready: %w", p.name, err)
		}
	}
	// A process's admin port can answer ready before the service behind it
	// has started (its health checks are added as it starts): the gateway
	// is ready for the load once its HTTP port accepts.
	if err := waitTCP(ctx, strings.TrimPrefix(s.URL, "http://")); err != nil {
		s.Stop()
		return nil, fmt.Errorf("gateway: %w", err)
	}
	return s, nil
}

func (s *System) spawn(name, bin string, args, env []string, admin string) error {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	s.procs = append(s.procs, &proc{name: name, cmd: cmd, admin: admin})
	return nil
}

// Stop interrupts every process (services first, NATS last) and waits.
func (s *System) Stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i]
		_ = p.cmd.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	s.procs = nil
}

// Usage is the CPU time and memory of each process, by name (workers summed).
type Usage map[string]ProcUsage

// ProcUsage is one component's resource use.
type ProcUsage struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	RSSBytes   int64   `json:"rss_bytes"`
}

// Sample reads CPU time and RSS of every process, plus Postgres server
// processes (by command name) as "postgres".
func (s *System) Sample() Usage {
	u := Usage{}
	add := func(name string, pid int) {
		cpu, rss := procStat(pid)
		v := u[name]
		v.CPUSeconds += cpu
		v.RSSBytes += rss
		u[name] = v
	}
	for _, p := range s.procs {
		add(p.name, p.cmd.Process.Pid)
	}
	add("bench clients", os.Getpid()) // the load generator and every simulated WebSocket client
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm")); strings.TrimSpace(string(comm)) == "postgres" {
			add("postgres", pid)
		}
	}
	return u
}

// Diff is the CPU used between two samples (RSS from the later one).
func (u Usage) Diff(before Usage) Usage {
	out := Usage{}
	for k, v := range u {
		out[k] = ProcUsage{CPUSeconds: v.CPUSeconds - before[k].CPUSeconds, RSSBytes: v.RSSBytes}
	}
	return out
}

// Metric reads one Prometheus value from a process's /metrics (summed over
// processes of that name).
func (s *System) Metric(name, metric string) float64 {
	var total float64
	for _, p := range s.procs {
		if p.name != name || p.admin == "" {
			continue
		}
		resp, err := http.Get("http://" + p.admin + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, metric+" ") || strings.HasPrefix(line, metric+"{") {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				total += v
			}
		}
		resp.Body.Close()
	}
	return total
}

func procStat(pid int) (cpuSeconds float64, rss int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// Fields after the parenthesised command name.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 22 {
		return 0, 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	pages, _ := strconv.ParseInt(f[21], 10, 64)
	return (utime + stime) / 100, pages * int64(os.Getpagesize()) // USER_HZ is 100 on Linux
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func waitTCP(ctx context.Context, addr string) error {
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s not listening after 15s", addr)
}

func waitReady(ctx context.Context, admin string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get("http://" + admin + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after 30s")
}

// Histogram reads a Prometheus histogram exposed by the named processes:
// cumulative bucket counts by upper bound (+Inf as math.Inf), summed over
// processes and label sets.
func (s *System) Histogram(name, metric string) map[float64]float64 {
	out := map[float64]float64{}
	for _, p := range s.procs {
		if p.name != name || p.admin == "" {
			continue
		}
		resp, err := http.Get("http://" + p.admin + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			line := sc.Text()
			i := strings.Index(line, `le="`)
			if !strings.HasPrefix(line, metric+"_bucket{") || i < 0 {
				continue
			}
			rest := line[i+4:]
			le, err := strconv.ParseFloat(rest[:strings.IndexByte(rest, '"')], 64) // "+Inf" parses as +Inf
			if err != nil {
				continue
			}
			f := strings.Fields(line)
			n, _ := strconv.ParseFloat(f[len(f)-1], 64)
			out[le] += n
		}
		resp.Body.Close()
	}
	return out
}

// Quantile returns the upper bound of the bucket holding quantile q of the
// observations made between two readings of a histogram; +Inf when it lies
// beyond the highest finite bucket (see Beyond).
func Quantile(before, after map[float64]float64, q float64) float64 {
	total := after[math.Inf(1)] - before[math.Inf(1)]
	if total <= 0 {
		return 0
	}
	best := math.Inf(1)
	for le, n := range after {
		if n-before[le] >= q*total && le < best {
			best = le
		}
	}
	return best
}

// Beyond turns a Quantile that may be +Inf into something JSON can carry:
// the histogram's highest finite bound, and whether the quantile lies above it.
func Beyond(v float64, hist map[float64]float64) (bound float64, over bool) {
	if !math.IsInf(v, 1) {
		return v, false
	}
	for le := range hist {
		if !math.IsInf(le, 1) && le > bound {
			bound = le
		}
	}
	return bound, true
}

// NewMasterKey is a random artifacts master key, base64.
func NewMasterKey() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails (crypto/rand)
	return base64.StdEncoding.EncodeToString(key)
}

// tokenEnv is the environment that gives a service the keys need names.
func tokenEnv(k bustoken.Keys, need bustoken.Need) []string {
	return strings.Fields(k.Only(need).Env())
}
