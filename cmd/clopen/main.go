// Command clopen is the one binary: `clopen dev` runs every service in one
// process with an embedded NATS server, `clopen serve <service>` runs one,
// and the operator and user commands live beside them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"

	worker "clopen.dev/services/engine-worker"
	"clopen.dev/services/engine-worker/fakellm"
)

func main() {
	worker.SandboxInit()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return // the command's flag set has printed its usage
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "clopen:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return fmt.Errorf("no command given")
	}
	switch args[0] {
	case "help", "-h", "--help":
		usage(stdout)
		return nil
	case "dev":
		return runDev(ctx, args[1:], getenv, stdout, stderr)
	case "version", "-version", "--version":
		fmt.Fprintln(stdout, version())
		return nil
	case "serve":
		return runServe(ctx, args[1:], getenv, stdout, stderr)
	case "migrate":
		if wantsHelp(args[1:]) {
			fmt.Fprint(stdout, "usage: clopen migrate\n\napplies every service's pending database migrations to DATABASE_URL\n"+
				"(clopen dev migrates its own database at start)\n")
			return nil
		}
		return runMigrate(ctx, getenv, stdout, stderr)
	case "postgres":
		return runPostgres(ctx, args[1:], getenv, stdout, stderr)
	case "nats":
		return runNATS(ctx, args[1:], getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, args[1:], getenv, stdout, stderr)
	case "fakellm":
		return fakellm.Main(ctx, args[1:], stdout, stderr)
	case "admin":
		return runAdmin(ctx, args[1:], getenv, stdout, stderr)
	case "chat":
		return runChat(ctx, args[1:], getenv, stdout, stderr)
	case "engines":
		return runEngines(ctx, args[1:], getenv, stdout, stderr)
	default:
		usage(stderr)
		return fmt.Errorf("unknown command %q", args[0])
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: clopen <command> [arguments]

commands:
  dev [--fakellm]     run every service in one process (embedded NATS, Postgres from
                      DATABASE_URL or a private cluster under the data dir); the
                      worker offers every ready engine; --fakellm points them all
                      at an in-process mock LLM; listens on $CLOPEN_HTTP_ADDR (default
                      127.0.0.1:8420), health and metrics on $CLOPEN_ADMIN_ADDR
                      (default 127.0.0.1:8421, off for none)
  version             print the build's version
  serve <service>     run one service: gateway, streammgr, engine-worker, artifacts, mcp-bridge
  migrate             apply every service's database migrations (DATABASE_URL)
  postgres --dir D    run a private PostgreSQL cluster in the foreground
  nats --dir D        run the embedded NATS server (JetStream) as its own process
  bench [flags]       load and latency benchmark against the raw JetStream/Postgres baseline
                      (clopen bench -h)
  engines install E   install agent engine E at its pinned version (npm, cached)
  engines doctor      say which engines are ready, and what to do about the others
  fakellm             serve the mock LLM (Anthropic, OpenAI Chat and Responses, Gemini)
                      on loopback for running real agent CLIs without a provider
  admin <command>     operator commands on DATABASE_URL: create-tenant, create-user,
                      create-key, list-tenants, tenant-limits, rotate-key,
                      nats-config, nats-passwords, bus-keys (clopen admin help)
  chat [flags]        chat with a session in the terminal (gateway $CLOPEN_URL, else
                      http://$CLOPEN_HTTP_ADDR; key $CLOPEN_API_KEY or the dev key;
                      --project --session --new --engine --model)
`)
}

// wantsHelp reports whether args ask for a command's usage.
func wantsHelp(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "-h" || a == "-help" || a == "--help" }) ||
		len(args) > 0 && args[0] == "help"
}

// version names the build: the module version (or "(devel)"), the commit
// and whether the tree was modified, and the Go version.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "clopen (unknown build)"
	}
	v := "clopen " + info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (%.12s%s)", rev, modified)
	}
	return v + " " + info.GoVersion
}
