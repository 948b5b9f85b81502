package snapshot

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
)

// countingStore counts the manifests fetched from a store.
type countingStore struct {
	Store
	gets atomic.Int32
}

func (s *countingStore) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, name)
}

// A manifest a worker captured or loaded is not fetched again; another
// tenant naming its id still gets nothing.
func TestMemoSavesTheFetchAndKeepsTenantsApart(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: newStore(t)}
	memo := NewMemo(1000)
	src := t.TempDir()
	write(t, src, "a.txt", "alpha", 0o644)
	a := &Snapshots{Store: store, Tenant: "tenant-a", Memo: memo}
	m, _, err := a.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.Load(ctx, m.ID)
	if err != nil || got != m {
		t.Fatalf("Load after Capture = %p, %v; want the captured manifest %p", got, err, m)
	}
	if n := store.gets.Load(); n != 0 {
		t.Errorf("Load of a manifest just captured fetched %d objects, want 0", n)
	}
	b := &Snapshots{Store: store, Tenant: "tenant-b", Memo: memo}
	if _, err := b.Load(ctx, m.ID); err == nil {
		t.Error("tenant B loaded tenant A's manifest through the memo")
	}
	// A worker without it in memory fetches it once.
	cold := &Snapshots{Store: store, Tenant: "tenant-a", Memo: NewMemo(1000)}
	before := store.gets.Load()
	for range 3 {
		if _, err := cold.Load(ctx, m.ID); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.gets.Load() - before; n != 1 {
		t.Errorf("three loads fetched %d times, want 1", n)
	}
}

func TestMemoDropsTheOldestPastItsBudget(t *testing.T) {
	memo := NewMemo(10)
	man := func(id string, files int) *Manifest {
		return &Manifest{ID: id, Trees: map[string][]Entry{"workspace": make([]Entry, files)}}
	}
	memo.put("t", man("one", 4))   // 5 entries
	memo.put("t", man("two", 4))   // 10
	memo.put("t", man("three", 4)) // one goes
	if memo.get("t", "one") != nil || memo.get("t", "two") == nil || memo.get("t", "three") == nil {
		t.Errorf("held one=%v two=%v three=%v; want the oldest dropped", memo.get("t", "one") != nil,
			memo.get("t", "two") != nil, memo.get("t", "three") != nil)
	}
	memo.put("t", man("huge", 50)) // over the whole budget: not held
	if memo.get("t", "huge") != nil || memo.get("t", "three") == nil {
		t.Error("a manifest over the budget displaced the others")
	}
	var nilMemo *Memo
	nilMemo.put("t", man("x", 1))
	if nilMemo.get("t", "x") != nil {
		t.Error("a nil memo held something")
	}
}

// A turn that adds many files counts their lines reading each pack once:
// it used to open the pack of every file on its own and read it up to the
// file, so 2,000 new files took longer than a minute.
func TestCountLinesReadsEachPackOnce(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: newStore(t)}
	src := t.TempDir()
	for i := range 2000 {
		write(t, src, fmt.Sprintf("d%d/f%04d.txt", i%10, i), fmt.Sprintf("line one of %d\nline two\n", i), 0o644)
	}
	s := &Snapshots{Store: store, Tenant: "t", PackSize: 16 << 10}
	m, st, err := s.Capture(ctx, nil, map[string]Tree{"workspace": {Dir: src}})
	if err != nil {
		t.Fatal(err)
	}
	changes := Diff(nil, m, "workspace")
	before := store.gets.Load()
	if err := s.CountLines(ctx, nil, m, "workspace", changes); err != nil {
		t.Fatal(err)
	}
	if gets := int(store.gets.Load() - before); gets > st.Packs {
		t.Errorf("CountLines over %d files fetched %d objects, want at most the %d packs", len(changes), gets, st.Packs)
	}
	for _, c := range changes {
		if c.Kind != "added" || c.Added != 2 || c.Removed != 0 {
			t.Fatalf("change %+v, want 2 lines added", c)
		}
	}
}
