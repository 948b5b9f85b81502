package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"clopen.dev/cmd/clopen/internal/stack"
	"clopen.dev/pkg/platform/egress"
	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/privatepg"
	"clopen.dev/pkg/platform/servekit"
	"clopen.dev/pkg/platform/telemetry"
	"clopen.dev/services/artifacts"
	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/engine-worker/engines"
	"clopen.dev/services/engine-worker/fakellm"
	"clopen.dev/services/gateway"
	bridge "clopen.dev/services/mcp-bridge"
)

// runDev runs every service in this process on an embedded NATS server, with
// Postgres from DATABASE_URL or a private cluster under the data dir. The
// worker offers the installed engines that are ready; --fakellm starts the
// mock LLM on a loopback port and points every engine at it. It returns when
// ctx ends (SIGINT), after stopping everything it started.
func runDev(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	began := time.Now()
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	fs.SetOutput(stderr)
	withFakeLLM := fs.Bool("fakellm", false, "start the mock LLM and point every engine at it")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := dataDir(getenv)
	if err != nil {
		return err
	}
	level := getenv("CLOPEN_LOG_LEVEL")
	if level == "" {
		level = "warn" // the terminal is for the URL and the errors
	}
	logger := logging.New(stderr, level)

	natsPort := 14222
	if p := getenv("CLOPEN_NATS_PORT"); p != "" {
		if natsPort, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("CLOPEN_NATS_PORT: %w", err)
		}
	} else if !portFree(natsPort) {
		natsPort = -1 // another NATS owns the default: any port will do
	}
	addr := getenv("CLOPEN_HTTP_ADDR")
	if addr == "" {
		addr = gateway.DefaultConfig().Addr
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w (set CLOPEN_HTTP_ADDR to use another address)", addr, err)
	}

	dbURL, stopDB, err := devDatabase(ctx, getenv, dir, logger)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopDB()

	setup := engines.SetupFromEnv(dir, getenv, logger)
	setup.OperatorCredentials = true // one user, on the developer's own keys
	// The model proxies may reach the machine's own model servers, as a
	// provider's apiUrl may name them (devProviderAllow).
	sandboxEnv := func(k string) string {
		if k == egress.EnvAllow {
			return devProviderAllow + "," + getenv(k)
		}
		return getenv(k)
	}
	if setup.Sandbox, err = engines.Sandboxing(ctx, sandboxEnv, filepath.Join(dir, "run"), logger); err != nil {
		if !errors.Is(err, engines.ErrNoSandbox) {
			ln.Close()
			return err
		}
		setup.NoSandbox = err // the scripted engine still runs; agents wait for a sandbox
	}
	if *withFakeLLM {
		url, stopLLM, err := fakellm.New(fakellm.Config{Logger: logger}).Start("127.0.0.1:0")
		if err != nil {
			ln.Close()
			return err
		}
		defer stopLLM()
		setup.LLMBaseURL = url
		fmt.Fprintf(stdout, "fakellm at %s: every engine talks to it\n", url)
	}
	tel, err := telemetry.Setup(ctx, "clopen-dev", getenv)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()
	// The worker reads its variables as a standalone one does
	// (CLOPEN_WORKSPACES, CLOPEN_WORKER_CAPACITY, …); unset, its dirs go
	// under the data dir.
	wc, err := worker.ConfigFromEnv(getenv)
	if err != nil {
		ln.Close()
		return err
	}
	if getenv("CLOPEN_GIT_ALLOW_LOCAL") == "" {
		wc.GitAllowLocal = true // one developer's machine: a project may be a local repository
	}
	// The bridge's stdio servers read their variables as a standalone
	// bridge does; unset, their dirs go under the data dir.
	bc := bridge.DefaultConfig()
	if err := bc.StdioFromEnv(getenv); err != nil {
		ln.Close()
		return err
	}
	// One developer's machine: the browser signing in to an MCP server
	// reaches the gateway where it listens.
	publicURL := getenv(artifacts.EnvPublicURL)
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	keyFile := filepath.Join(dir, gateway.DevKeyFile)
	gc := gateway.DefaultConfig()
	gc.DevKeyFile = keyFile // the web app on this machine signs in as the dev user
	st, err := stack.Start(ctx, stack.Config{Dir: dir, NATSPort: natsPort, DatabaseURL: dbURL, HTTP: ln, Logger: logger,
		Engines: &setup, Worker: wc, Gateway: &gc, Bridge: &bc,
		Artifacts: artifacts.Config{DataDir: dir, MasterKey: getenv("CLOPEN_MASTER_KEY"), RealHome: getenv("CLOPEN_ARTIFACTS_REAL_HOME"),
			PublicURL: publicURL,
			// One developer's machine: a provider may name a model server of its own.
			Egress: egress.Policy{Allow: egress.ParseAllow(devProviderAllow + "," + getenv(artifacts.EnvProviderAllow))}}})
	if err != nil {
		ln.Close()
		return err
	}
	adminLine, stopAdmin, err := devAdmin(getenv, servekit.AdminHandler(st.Health, tel.Metrics), logger)
	if err != nil {
		_ = st.Stop()
		return err
	}
	defer stopAdmin()
	if _, err := gateway.EnsureDevAccount(ctx, st.DB, keyFile); err != nil {
		_ = st.Stop()
		return fmt.Errorf("dev account: %w", err)
	}
	readyCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = st.Ready(readyCtx)
	cancel()
	if err != nil {
		_ = st.Stop()
		return err
	}
	exe, _ := os.Executable()
	fmt.Fprintf(stdout, "Clopen is running at %s (%s)\n", st.URL, readyNote(time.Since(began), exe))
	fmt.Fprintf(stdout, "  data dir %s\n  NATS %s\n  Postgres %s\n%s\n", dir, st.NATSURL, redacted(dbURL), adminLine)
	fmt.Fprintf(stdout, "  API key (tenant dev, project default) in %s\n", keyFile)
	fmt.Fprintf(stdout, "  open %s in a browser (signed in as the dev user), or try: go run ./cmd/clopen chat    (Ctrl-C stops Clopen)\n", st.URL)
	<-st.Done()
	err = st.Err()
	fmt.Fprintln(stdout, "Clopen stopped")
	return err
}

// defaultAdminAddr is where `clopen dev` serves health and metrics unless
// CLOPEN_ADMIN_ADDR says otherwise.
const defaultAdminAddr = "127.0.0.1:8421"

// devAdmin serves health and metrics on $CLOPEN_ADMIN_ADDR (default
// defaultAdminAddr; "off" for none) and returns the banner's line about it
// and the function that stops it. An address asked for that cannot be bound
// is an error; the default one taken by another process is only said in the
// line, since Clopen runs without it.
func devAdmin(getenv func(string) string, h http.Handler, logger *slog.Logger) (line string, stop func(), err error) {
	addr := getenv("CLOPEN_ADMIN_ADDR")
	switch addr {
	case "off":
		return "  health and metrics: off (CLOPEN_ADMIN_ADDR=off)", func() {}, nil
	case "":
		stop, err := servekit.ServeAdmin(defaultAdminAddr, h, logger)
		if err != nil {
			return fmt.Sprintf("  health and metrics: not served, %v (set CLOPEN_ADMIN_ADDR to another address, or off)", err), func() {}, nil
		}
		return "  health and metrics http://" + defaultAdminAddr + "/readyz /metrics", stop, nil
	}
	stop, err = servekit.ServeAdmin(addr, h, logger)
	if err != nil {
		return "", nil, fmt.Errorf("%w (CLOPEN_ADMIN_ADDR; off for none)", err)
	}
	return "  health and metrics http://" + addr + "/readyz /metrics", stop, nil
}

// readyNote says how long the start took, from when the command began. Under
// `go run` the build came first and is not in it, which the note says.
func readyNote(took time.Duration, exe string) string {
	note := fmt.Sprintf("started in %.1fs", took.Seconds())
	if strings.Contains(filepath.ToSlash(exe), "/go-build") {
		note += ", after the build `go run` did first"
	}
	return note
}

// redacted is a database URL without its password.
func redacted(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(from DATABASE_URL)"
	}
	return u.Redacted()
}

func portFree(port int) bool {
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}

// devDatabase returns DATABASE_URL when set; otherwise it starts (and the
// returned function stops) a private cluster under the data dir.
func devDatabase(ctx context.Context, getenv func(string) string, dir string, logger *slog.Logger) (string, func(), error) {
	if url := getenv("DATABASE_URL"); url != "" {
		return url, func() {}, nil
	}
	cluster, err := privatepg.Start(ctx, privatepg.Config{Dir: filepath.Join(dir, "postgres"), Logger: logger})
	if err != nil {
		return "", nil, fmt.Errorf("no DATABASE_URL, and a private Postgres could not start: %w", err)
	}
	return cluster.URL(), func() {
		sctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
		defer cancel()
		if err := cluster.Stop(sctx); err != nil {
			logger.Error("stop private postgres", "err", err)
		}
	}, nil
}

// devProviderAllow are the hosts `clopen dev` lets a provider's apiUrl name
// besides public https endpoints: the machine's own, where a local model
// server or fakellm listens.
const devProviderAllow = "127.0.0.1,localhost,::1"
