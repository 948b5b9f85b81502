#!/usr/bin/env bash
# Runs every test of every workspace module, the way CI does.
#
#   0. installs bubblewrap (agent sandbox) and Prometheus (dashboard test)
#      when missing;
#   1. makes sure a Postgres is reachable and exports DATABASE_URL:
#      DATABASE_URL if it answers, else the server on 127.0.0.1:5432, else a
#      private cluster started here (installing the server package if needed);
#   2. installs the pinned agent engines (clopen engines install; npm's cache
#      in $CLOPEN_NPM_CACHE keeps reinstalls fast) and exports
#      CLOPEN_ENGINES_DIR, which turns on the tests against the real CLIs,
#      and the pinned MCP test server (CLOPEN_MCP_EVERYTHING);
#   3. checks gofmt and go vet;
#   4. runs go test -race over every module, then each fuzz target briefly;
#   5. builds every module on its own (GOWORK=off), as Docker images do;
#   6. the web app (web/): installs Chromium (Debian's package) when missing
#      and the pinned npm packages (npm ci), type-checks, runs its unit
#      tests, checks that the committed build and the generated API types
#      are what the sources make, then runs the browser suite against a real
#      clopen dev.
#
# Environment: FUZZTIME (default 10s per target), TEST_TIMEOUT (default 30m),
# CI=true makes integration tests fail instead of skip when infrastructure is missing
# (a database, root for the engine sandboxes, an installed engine).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
fuzztime=${FUZZTIME:-10s}
timeout=${TEST_TIMEOUT:-30m}
step() { printf '\n==> %s\n' "$*"; }

pg_answers() { # url
  command -v pg_isready >/dev/null 2>&1 || return 1
  pg_isready -q -d "$1" -t 3
}

private_pid=""
fuzzlog=""
cleanup() {
  if [ -n "$fuzzlog" ]; then rm -f "$fuzzlog"; fi
  if [ -n "$private_pid" ]; then
    kill -INT "$private_pid" 2>/dev/null || true
    wait "$private_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT

apt_install() { # package: Debian's, as root or through sudo
  if [ "$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq "$1" >/dev/null
  else sudo apt-get update -qq && sudo apt-get install -y -qq "$1" >/dev/null; fi
}
need() { # command package: installs package when command is missing
  command -v "$1" >/dev/null 2>&1 && return
  echo "no $1: installing the $2 package"
  apt_install "$2"
}

step "bubblewrap"
# Agents run confined by bubblewrap; the sandbox and hostile-agent tests need it.
need bwrap bubblewrap
bwrap --version

step "Chromium"
# The web app's browser suite drives Debian's Chromium (no browser download).
need chromium chromium
chromium --version

step "Prometheus"
# The dashboard test scrapes a running Clopen with a real Prometheus.
need prometheus prometheus
prometheus --version 2>&1 | head -n 1

step "Postgres"
if [ -n "${DATABASE_URL:-}" ] && pg_answers "$DATABASE_URL"; then
  echo "using DATABASE_URL"
elif pg_answers "postgres://postgres@127.0.0.1:5432/postgres"; then
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
  echo "using the server on 127.0.0.1:5432"
else
  if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1 && ! command -v postgres >/dev/null 2>&1; then
    echo "no PostgreSQL server binaries: installing the postgresql package"
    apt_install postgresql
  fi
  pgdir=$(mktemp -d /tmp/clopen-test-pg.XXXXXX)
  urlfile="$pgdir/url"
  go run ./cmd/clopen postgres --dir "$pgdir" --url-file "$urlfile" &
  private_pid=$!
  for _ in $(seq 1 120); do [ -s "$urlfile" ] && break; sleep 0.5; done
  [ -s "$urlfile" ] || { echo "private postgres did not start" >&2; exit 1; }
  export DATABASE_URL=$(cat "$urlfile")
  echo "started a private cluster in $pgdir"
fi

step "agent engines"
export CLOPEN_ENGINES_DIR=${CLOPEN_ENGINES_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/clopen/engines}
for engine in claude-code codex pi gemini qwen copilot opencode cline; do
  # One line when the pinned version is already there; npm's progress otherwise.
  go run ./cmd/clopen engines install "$engine"
done

step "MCP test server"
# A real third-party MCP server, pinned, which the bridge's proxy tests run
# over stdio and over Streamable HTTP; kept between runs like the engines.
everything_version=2026.8.31
everything_dir=${XDG_DATA_HOME:-$HOME/.local/share}/clopen/mcp/server-everything-$everything_version
export CLOPEN_MCP_EVERYTHING=$everything_dir/node_modules/@modelcontextprotocol/server-everything/dist/index.js
if [ -f "$CLOPEN_MCP_EVERYTHING" ]; then
  echo "@modelcontextprotocol/server-everything $everything_version is installed"
else
  npm install --no-audit --no-fund --prefix "$everything_dir" "@modelcontextprotocol/server-everything@$everything_version"
fi

modules=$(go list -m -f '{{.Dir}}')

step "gofmt"
unformatted=$(gofmt -l $modules)
if [ -n "$unformatted" ]; then echo "gofmt would change:"; echo "$unformatted"; exit 1; fi

step "go vet"
go vet clopen.dev/...

step "go test -race"
go test -race -count=1 -timeout "$timeout" clopen.dev/... 2>&1 | tee /tmp/clopen-test-output.txt
ran=$(grep -c '^ok ' /tmp/clopen-test-output.txt || true)
echo "packages passed: $ran"

step "fuzz targets (${fuzztime} each)"
# Every Fuzz* function in the workspace, run briefly on top of its committed corpus.
# A failure prints the fuzzer's report. Go's fuzzing engine also fails on its
# own (a run ending at -fuzztime mid-exec: "context deadline exceeded"; a
# worker stalled by a busy machine: "hung or terminated unexpectedly"), so a
# failure counts when its input reproduces it: a crash's input, written to
# testdata/fuzz/<target>/, is run again as a plain test and kept (commit it:
# it becomes a regression seed). A failure that names no input, or whose
# input passes when run again, is fuzzed once more, and a second failure is final.
fuzzlog=$(mktemp)
fuzz_once() { # dir target
  (cd "$1" && go test -run='^$' -fuzz="^$2\$" -fuzztime="$fuzztime" . >"$fuzzlog" 2>&1)
}
fuzz_failed() { # dir target: report the failure; true if its input reproduces it
  tail -n 60 "$fuzzlog"
  input=$(grep -o 'testdata/fuzz/[^ ]*' "$fuzzlog" | head -n 1)
  [ -n "$input" ] || return 1
  echo "the failing input, $input:"; head -c 4000 "$1/$input"; echo
  if (cd "$1" && go test -count=1 -run="^$2\$/^${input##*/}\$" . >/dev/null 2>&1); then
    echo "-- the input passes when run again: not a reproducible failure"
    rm -f "$1/$input"
    return 1
  fi
  echo "fuzz target $2 failed; reproduce with: cd $1 && go test -run=$2/${input##*/}"
}
grep -rl --include='*_test.go' '^func Fuzz' $modules | while read -r f; do
  dir=$(dirname "$f")
  for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
    echo "-- $target ($dir)"
    fuzz_once "$dir" "$target" && continue
    fuzz_failed "$dir" "$target" && exit 1
    echo "-- $target: fuzzing once more"
    fuzz_once "$dir" "$target" && continue
    fuzz_failed "$dir" "$target" || true
    echo "fuzz target $target failed twice"
    exit 1
  done
done

step "GOWORK=off build of every module"
for m in $modules; do (cd "$m" && GOWORK=off go build ./...) || { echo "build of $m failed"; exit 1; }; done

step "web app"
# Node 20.19 or newer (the engines' npm installs need Node too); Vite needs it.
node -e 'const [a,b]=process.versions.node.split(".").map(Number); if (a<20||(a===20&&b<19)) { console.error("the web app needs Node 20.19 or newer, not "+process.version); process.exit(1) }'
(
  cd web
  npm ci --no-audit --no-fund
  npm run check
  npm test
  # The committed build (what the gateway embeds) and the API types must be
  # exactly what the sources make.
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
  npx openapi-typescript openapi.json -o "$out/schema.d.ts" >/dev/null
  diff -u src/lib/api/schema.d.ts "$out/schema.d.ts" || { echo "web/src/lib/api/schema.d.ts is stale: run npm run gen in web/ and commit it"; exit 1; }
  CLOPEN_WEB_OUT="$out/dist" npx vite build >/dev/null
  diff -r ../services/gateway/internal/webui/dist "$out/dist" || { echo "the committed web build differs from the sources: run npm run build in web/ and commit services/gateway/internal/webui/dist"; exit 1; }
  echo "the committed build is the sources' build"
  npm run e2e
)

echo
echo "all checks passed"
