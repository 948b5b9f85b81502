package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/logging"
	"clopen.dev/pkg/platform/pgdb"
	"clopen.dev/pkg/platform/pgtest"
	"clopen.dev/services/artifacts"
)

func TestAdminRotateKeyReplacesTheKeyFile(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	pool, err := pgdb.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if _, err := pgdb.Migrate(ctx, pool, artifacts.Schema, logging.Discard()); err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	env := map[string]string{"DATABASE_URL": url, "CLOPEN_DATA": data}
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"admin", "rotate-key"}, getenv, &out, &errOut); err != nil {
		t.Fatalf("rotate-key: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "re-sealed 0 credential(s)") {
		t.Errorf("output = %q", out.String())
	}
	for _, f := range []string{"secret.key", "secret.key.old"} {
		fi, err := os.Stat(filepath.Join(data, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want a 0600 file", f, fi, err)
		}
	}
	oldKey, _ := os.ReadFile(filepath.Join(data, "secret.key.old"))
	newKey, _ := os.ReadFile(filepath.Join(data, "secret.key"))
	if bytes.Equal(oldKey, newKey) {
		t.Error("the key did not change")
	}
	env["DATABASE_URL"] = ""
	if err := run(ctx, []string{"admin", "rotate-key"}, getenv, &out, &errOut); err == nil {
		t.Error("rotate-key without DATABASE_URL succeeded")
	}
}
