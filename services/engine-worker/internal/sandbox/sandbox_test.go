package sandbox

import (
	"context"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("the sandbox needs root")
		}
		t.Skip("the sandbox needs root")
	}
}

// TestBwrapCheck proves every property Check verifies holds with
// bubblewrap on this host.
func TestBwrapCheck(t *testing.T) {
	needRoot(t)
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
