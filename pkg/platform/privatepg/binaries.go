package privatepg

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoPostgres is returned by FindBinaries and Start when no PostgreSQL
// server binaries are installed. Its message says what to install.
var ErrNoPostgres = errors.New("PostgreSQL server not installed; install the PostgreSQL server: " +
	"apt-get install postgresql (or set DATABASE_URL to use an existing server)")

// debianRoot is where Debian and Ubuntu install one bin directory per major
// version. A variable so tests can point it at an empty directory.
var debianRoot = "/usr/lib/postgresql"

// FindBinaries returns the directory holding initdb and postgres: the one
// initdb on PATH resolves to (symlinks followed), else the highest version
// under /usr/lib/postgresql/<version>/bin. When neither has both binaries
// the error wraps ErrNoPostgres.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil && hasServer(filepath.Dir(real)) {
			return filepath.Dir(real), nil
		}
	}
	entries, _ := os.ReadDir(debianRoot)
	type version struct {
		name string
		num  []int
	}
	var versions []version
	for _, e := range entries {
		if num, ok := parseVersion(e.Name()); ok {
			versions = append(versions, version{e.Name(), num})
		}
	}
	slices.SortFunc(versions, func(a, b version) int { return slices.Compare(b.num, a.num) })
	for _, v := range versions {
		dir := filepath.Join(debianRoot, v.name, "bin")
		if hasServer(dir) {
			return dir, nil
		}
	}
	return "", fmt.Errorf("find initdb and postgres in PATH and %s/*/bin: %w", debianRoot, ErrNoPostgres)
}

// hasServer reports whether dir holds executable initdb and postgres.
func hasServer(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return false
		}
	}
	return true
}

// parseVersion reads a Debian version directory name ("15", "9.6").
func parseVersion(name string) ([]int, bool) {
	var v []int
	for _, part := range strings.Split(name, ".") {
		n, err := strconv.Atoi(part)
		if err != nil || n < 0 {
			return nil, false
		}
		v = append(v, n)
	}
	return v, true
}
