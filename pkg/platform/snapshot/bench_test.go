package snapshot

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSnapshot measures a workspace of 20,000 files and 200 MB
// (mostly small files, ten large ones) on a real embedded JetStream: a
// cold restore into an empty directory, a capture after one file changed,
// a capture with nothing changed, and how much the store grows over 100
// one-file-change turns. Run it once: go test -run X -bench Snapshot -benchtime 1x.
func BenchmarkSnapshot(b *testing.B) {
	ctx := context.Background()
	src := b.TempDir()
	src8 := rand.NewChaCha8([32]byte{1})
	rng := rand.New(src8)
	past := time.Now().Add(-time.Hour)
	var total int64
	for i := range 20_000 {
		size := 1 + rng.IntN(10_000) // about 5 KB on average: 100 MB
		if i%2000 == 0 {
			size = 10 << 20 // ten files of 10 MB: 100 MB
		}
		data := make([]byte, size)
		src8.Read(data)
		if i%97 != 0 { // most files are text; some stay binary
			for j := range data {
				data[j] = 'a' + data[j]%26
			}
		}
		p := filepath.Join(src, fmt.Sprintf("d%02d/s%02d/f%05d.txt", i%50, i%7, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
		// Older than the cache's racy window, as a workspace between turns is.
		if err := os.Chtimes(p, past, past); err != nil {
			b.Fatal(err)
		}
		total += int64(size)
	}
	cache, err := NewCache(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	store := newStore(b)
	s := &Snapshots{Store: store, Tenant: "bench", Cache: cache}
	trees := map[string]Tree{"workspace": {Dir: src}}
	b.ResetTimer()
	for b.Loop() {
		m, st, err := s.Capture(ctx, nil, trees)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(st.Took.Seconds(), "cold-capture-s")
		b.ReportMetric(float64(st.Packs), "packs")
		b.ReportMetric(float64(total)/1e6, "tree-MB")

		cold := &Snapshots{Store: store, Tenant: "bench"}
		rst, err := cold.Restore(ctx, m, map[string]string{"workspace": b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(rst.Took.Seconds(), "cold-restore-s")
		// The baseline, in the same run: a plain copy of the tree, file by
		// file, into an empty dir on the same disk — the least a restore
		// can cost without a store in between.
		copied := time.Now()
		copyTree(b, src, b.TempDir())
		base := time.Since(copied).Seconds()
		b.ReportMetric(base, "baseline-copy-s")
		b.ReportMetric(rst.Took.Seconds()/base, "restore-x-copy")
		b.ReportMetric(st.Took.Seconds()/base, "capture-x-copy")

		change := func(turn int) Stats {
			p := filepath.Join(src, fmt.Sprintf("d%02d/s%02d/f%05d.txt", 1, 1, 1))
			if err := os.WriteFile(p, fmt.Appendf(nil, "turn %d\n%s", turn, make([]byte, 4000)), 0o644); err != nil {
				b.Fatal(err)
			}
			next, st, err := s.Capture(ctx, m, trees)
			if err != nil {
				b.Fatal(err)
			}
			m = next
			return st
		}
		st = change(0)
		b.ReportMetric(st.Took.Seconds(), "one-change-capture-s")
		b.ReportMetric(float64(st.Uploaded)/1e3, "one-change-uploaded-KB")

		next, st, err := s.Capture(ctx, m, trees)
		if err != nil {
			b.Fatal(err)
		}
		m = next
		b.ReportMetric(st.Took.Seconds(), "noop-capture-s")
		b.ReportMetric(float64(st.Uploaded)/1e3, "noop-uploaded-KB")

		var grown int64
		for turn := 1; turn <= 100; turn++ {
			grown += change(turn).Uploaded
		}
		b.ReportMetric(float64(grown)/1e6, "growth-100-turns-MB")
	}
}

// copyTree copies the regular files under src to dst.
func copyTree(b *testing.B, src, dst string) {
	b.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		b.Fatal(err)
	}
}
