package enginetest

import (
	"context"
	"os"
	"testing"

	"clopen.dev/pkg/events"
	"clopen.dev/services/engine-worker/engines"
)

// EnginesDir is where the suite looks for installed engines:
// $CLOPEN_ENGINES_DIR, else the default data dir's engines
// (~/.local/share/clopen/engines), where `clopen engines install` puts them.
func EnginesDir() string {
	return engines.SetupFromEnv(engines.DefaultDataDir(os.Getenv), os.Getenv, nil).Root()
}

// InstalledBin returns the executable of the engine's pinned install. When
// it is missing the test is skipped with the command that installs it, or
// fails under CI=true, where the CI script installs every engine first.
func InstalledBin(t testing.TB, typ events.EngineType) string {
	t.Helper()
	spec, ok := engines.Lookup(typ)
	if !ok {
		t.Fatalf("engine %s is not in the engines table", typ)
	}
	dir := EnginesDir()
	v, err := spec.InstalledVersion(context.Background(), dir)
	if err == nil && v == spec.Version {
		return spec.BinPath(dir)
	}
	msg := "engine " + string(typ) + " " + spec.Version + " is not installed in " + dir +
		": run `go run ./cmd/clopen engines install " + string(typ) + "` (and set CLOPEN_ENGINES_DIR if you installed elsewhere)"
	if err == nil {
		msg += " (found version " + v + ")"
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}
