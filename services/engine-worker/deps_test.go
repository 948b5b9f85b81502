package worker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoDatabaseDependencies: the worker has no database, so it links no
// Postgres driver, no migration tool and nothing of the artifacts module
// (it places artifacts' content through its adapters' layouts with
// pkg/events/plan), and neither do its tests (they stand in for artifacts
// on the bus where they need it).
func TestNoDatabaseDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-test", "./...").Output()
	if err != nil {
		t.Fatalf("go list -deps -test: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/jackc/pgx", "github.com/pressly/goose", "clopen.dev/services/artifacts"} {
			if strings.HasPrefix(pkg, banned) {
				t.Errorf("the worker depends on %s", pkg)
			}
		}
	}
}
