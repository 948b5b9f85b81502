package enginetest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"clopen.dev/pkg/platform/sandbox"
	"clopen.dev/services/engine-worker/fakellm"
)

// fakellmEnv, when set in a test binary's environment, makes Main run
// fakellm with the flags it holds instead of the tests (os/exec's
// helper-process pattern): the sandbox starts fakellm inside its network
// namespace by re-executing the test binary.
const fakellmEnv = "CLOPEN_ENGINETEST_FAKELLM"

// Main is the TestMain of an adapter's test package: it serves fakellm when
// the sandbox re-executes the binary for that, and otherwise runs the tests
// and then fails if goroutines were left behind (an adapter's process
// readers, waiters and warm-process timers all have owners that end them).
func Main(m *testing.M) {
	sandbox.Main() // the sandbox's init, when a confined agent is started
	serveIf(mcpEchoEnv, "mcpecho", func(ctx context.Context, v string) error { return serveMCPEcho(ctx, v, os.Stdout) })
	serveIf(bridgeEnv, "bridge", func(ctx context.Context, v string) error { return serveBridge(ctx, v, os.Stdout) })
	serveIf(fakellmEnv, "fakellm", func(ctx context.Context, v string) error {
		return fakellm.Main(ctx, strings.Fields(v), os.Stdout, os.Stderr)
	})
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// serveIf, when env is set, runs serve with its value until SIGTERM and
// exits: the test binary re-executed as one of the sandbox's helpers.
func serveIf(env, name string, serve func(ctx context.Context, value string) error) {
	v := os.Getenv(env)
	if v == "" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := serve(ctx, v)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, name+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// Sandbox is a loopback-only network namespace with fakellm listening in
// it. Agents run in it through Wrap, which also gives them a PID namespace
// of their own: nothing they start survives them, and nothing they do
// reaches past loopback.
type Sandbox struct {
	// NS is the network namespace's name.
	NS string
	// BaseURL is fakellm's address inside the namespace.
	BaseURL string
	// Wrap runs a command in the namespace and a fresh PID namespace.
	Wrap []string
	// RequestLog is fakellm's request log (one fakellm.Request per line).
	RequestLog string

	confined *confined // set by Confine
}

// NeedRoot skips the test when it cannot create namespaces, or fails it
// under CI=true, where nothing may be skipped.
func NeedRoot(t testing.TB) {
	t.Helper()
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	for _, tool := range []string{"ip", "unshare"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("hermetic engine tests need %s (network and PID namespaces)", strings.Join(missing, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// NewSandbox creates the namespace, starts fakellm in it (stalls of
// @@SLOW@@ last slow) and removes both when the test ends.
func NewSandbox(t testing.TB, slow time.Duration) *Sandbox {
	t.Helper()
	NeedRoot(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	sb := &Sandbox{NS: "clopen-et-" + hex.EncodeToString(b[:]), RequestLog: filepath.Join(t.TempDir(), "requests.jsonl")}
	if out, err := exec.Command("ip", "netns", "add", sb.NS).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "del", sb.NS).CombinedOutput(); err != nil {
			t.Errorf("ip netns del %s: %v: %s", sb.NS, err, out)
		}
	})
	if out, err := exec.Command("ip", "-n", sb.NS, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Fatalf("ip link set lo up: %v: %s", err, out)
	}
	sb.Wrap = []string{"ip", "netns", "exec", sb.NS, "unshare", "--pid", "--fork", "--mount-proc", "--"}

	sb.BaseURL = sb.helper(t, fmt.Sprintf("%s=-addr 127.0.0.1:0 -log %s -slow-secs %g", fakellmEnv, sb.RequestLog, slow.Seconds()),
		"fakellm listening on ")
	return sb
}

// MCPEcho starts an MCP server inside the sandbox (streamable HTTP, one
// tool: echo{text} answers "echo:<text>") and returns its URL.
func (sb *Sandbox) MCPEcho(t testing.TB) string {
	t.Helper()
	url := sb.helper(t, mcpEchoEnv+"=127.0.0.1:0", "mcpecho listening on ")
	sb.bridge(t, url)
	return url
}

// helper re-executes the test binary inside the namespace with env set,
// waits for the line starting with ready and returns the rest of it; the
// process is stopped when the test ends.
func (sb *Sandbox) helper(t testing.TB, env, ready string) string {
	t.Helper()
	cmd := exec.Command("ip", "netns", "exec", sb.NS, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", env, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), ready); ok {
				found <- rest
			}
		}
	}()
	select {
	case url := <-found:
		return url
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not start in the sandbox", env)
		return ""
	}
}

// Requests reads fakellm's request log so far.
func (sb *Sandbox) Requests(t testing.TB) []fakellm.Request {
	t.Helper()
	data, err := os.ReadFile(sb.RequestLog)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []fakellm.Request
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r fakellm.Request
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("request log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}
