package snapshot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCollect takes two turns' snapshots of one session (the second drops
// the only file of the first, whose pack then only the first uses) and a snapshot
// and one of another tenant, then collects with only some named live: dead
// manifests past the grace period go with the packs only they used; live
// ones stay restorable, young ones stay, and another tenant is untouched.
func TestCollect(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	a := &Snapshots{Store: store, Tenant: "tenant-a"}
	b := &Snapshots{Store: store, Tenant: "tenant-b"}
	dir := t.TempDir()
	write(t, dir, "gone.txt", "only in the first snapshot", 0o644)
	tree := func() map[string]Tree { return map[string]Tree{"workspace": {Dir: dir}} }
	first, _, err := a.Capture(ctx, nil, tree())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "second.txt", "second turn", 0o644)
	write(t, dir, "kept.txt", "from the second turn on", 0o644)
	second, _, err := a.Capture(ctx, first, tree())
	if err != nil {
		t.Fatal(err)
	}
	// b's dead snapshot shares its pack with b's live one: the pack stays.
	bdir := t.TempDir()
	write(t, bdir, "x.txt", "in both of b's snapshots", 0o644)
	otherDead, _, err := b.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: bdir}})
	if err != nil {
		t.Fatal(err)
	}
	write(t, bdir, "y.txt", "only in b's live one", 0o644)
	other, _, err := b.Capture(ctx, otherDead, map[string]Tree{"workspace": {Dir: bdir}})
	if err != nil {
		t.Fatal(err)
	}
	gc := GC{Store: store, Grace: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) },
		Live: func(_ context.Context, tenant string) (map[string]bool, error) {
			if tenant == "tenant-a" {
				return map[string]bool{second.ID: true}, nil
			}
			return map[string]bool{other.ID: true}, nil
		}}

	// A dry run counts and deletes nothing.
	dry := gc
	dry.DryRun = true
	st, err := dry.Collect(ctx)
	if err != nil || st.DeletedManifests != 2 || st.DeletedPacks != 1 || st.Tenants != 2 {
		t.Fatalf("dry run = %+v, %v; want 2 manifests and 1 pack of 2 tenants", st, err)
	}
	if _, err := a.Load(ctx, first.ID); err != nil {
		t.Fatalf("a dry run deleted the first manifest: %v", err)
	}

	st, err = gc.Collect(ctx)
	if err != nil || st.DeletedManifests != 2 || st.DeletedPacks != 1 || st.Freed <= 0 {
		t.Fatalf("Collect = %+v, %v; want both dead manifests and the first's own pack deleted", st, err)
	}
	if _, err := a.Load(ctx, first.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the dead manifest is still there: %v", err)
	}
	out := t.TempDir()
	if _, err := a.Restore(ctx, second, map[string]string{"workspace": out}); err != nil {
		t.Fatalf("the live snapshot no longer restores: %v", err)
	}
	if got := listing(t, out); got != listing(t, dir) {
		t.Errorf("restored live snapshot:\n%s\nwant:\n%s", got, listing(t, dir))
	}
	bout := t.TempDir()
	if _, err := b.Restore(ctx, other, map[string]string{"workspace": bout}); err != nil {
		t.Errorf("the other tenant's live snapshot no longer restores: %v", err)
	} else if listing(t, bout) != listing(t, bdir) {
		t.Errorf("b's restored snapshot:\n%s\nwant:\n%s", listing(t, bout), listing(t, bdir))
	}

	// Within the grace period nothing goes, live or not.
	young := GC{Store: store, Grace: time.Hour, Live: func(context.Context, string) (map[string]bool, error) { return nil, nil }}
	if st, err := young.Collect(ctx); err != nil || st.DeletedManifests != 0 || st.DeletedPacks != 0 {
		t.Errorf("a collection within the grace period deleted %+v, %v", st, err)
	}
	// A failing live query deletes nothing of that tenant.
	failing := gc
	failing.Live = func(context.Context, string) (map[string]bool, error) { return nil, errors.New("database down") }
	if st, err := failing.Collect(ctx); err == nil || st.DeletedManifests != 0 || st.DeletedPacks != 0 {
		t.Errorf("a collection whose live query failed = %+v, %v; want an error and nothing deleted", st, err)
	}
}
