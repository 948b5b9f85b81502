package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"

	"clopen.dev/pkg/platform/sandbox/sandboxtest"
)

func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

// TestBwrapCheck proves every property Check verifies holds with
// bubblewrap on this host.
func TestBwrapCheck(t *testing.T) {
	sandboxtest.NeedRoot(t)
	if err := (&Bwrap{}).Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestUIDStableAndInRange(t *testing.T) {
	r := DefaultUIDRange
	a, b := r.UID("tenant-a"), r.UID("tenant-b")
	if a != r.UID("tenant-a") {
		t.Fatal("uid not stable")
	}
	if a == b {
		t.Fatalf("two tenants share uid %d", a)
	}
	for _, u := range []int{a, b} {
		if u < r.First || u >= r.First+r.Size {
			t.Fatalf("uid %d outside %+v", u, r)
		}
	}
}

func TestSpecRefusesRoot(t *testing.T) {
	if _, err := (&Bwrap{}).Command(Spec{}, []string{"true"}); err == nil {
		t.Fatal("a spec without a uid was accepted")
	}
}

// TestCommandRunsAsTenant runs a shell in the sandbox with tight limits and
// checks who it is.
func TestCommandRunsAsTenant(t *testing.T) {
	sandboxtest.NeedRoot(t)
	ws := t.TempDir()
	cmd, err := (&Bwrap{}).Command(Spec{UID: 100123, GID: 100123, Workspace: ws,
		Limits: Limits{MemoryBytes: 1536 << 20, Procs: 96}}, []string{"/bin/sh", "-c", "id -u; pwd; ls /etc/ssl >/dev/null; grep -q :100123: /etc/passwd"})
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	c.ExtraFiles = cmd.ExtraFiles
	out, err := c.CombinedOutput()
	cmd.Close()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "100123\n" + ws + "\n"; string(out) != want {
		t.Fatalf("got %q, want %q", out, want)
	}
}

// TestCommandEnvReachesOnlyTheCommand: CommandEnv is the command's, read
// from a file the command itself cannot read, and never on bwrap's
// command line.
func TestCommandEnvReachesOnlyTheCommand(t *testing.T) {
	sandboxtest.NeedRoot(t)
	cmd, err := (&Bwrap{}).Command(Spec{UID: 100124, GID: 100124, Workspace: t.TempDir(), CommandEnv: []string{"SECRET=s3cr3t value"}},
		[]string{"/bin/sh", "-c", `echo "$SECRET"; cat /.clopen/env 2>/dev/null || echo unreadable`})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cmd.Argv {
		if strings.Contains(a, "s3cr3t") {
			t.Errorf("bwrap's command line holds the command's env: %q", a)
		}
	}
	c := exec.Command(cmd.Argv[0], cmd.Argv[1:]...)
	c.ExtraFiles = cmd.ExtraFiles
	out, err := c.CombinedOutput()
	cmd.Close()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if want := "s3cr3t value\nunreadable\n"; string(out) != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
