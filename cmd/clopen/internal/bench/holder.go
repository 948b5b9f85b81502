package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"clopen.dev/pkg/events"
	"clopen.dev/services/gateway/api"
	"clopen.dev/services/gateway/client"
)

// HolderResult is what a turn costs on the worker that already holds its
// session's snapshot: the same scripted turn, one at a time, in a session
// whose workspace holds Files files (MB in all) and in one whose workspace
// is empty, alternating, on one worker. Before a turn the worker checks its
// copy against the snapshot the job names (a manifest read, from memory
// after the first); after it, it captures the workspace (a walk that reads
// only files whose stat changed). The empty session's turns are the turn
// as it was before sessions had snapshots, to within a few files' work.
type HolderResult struct {
	Engine events.EngineType `json:"engine"`
	Files  int               `json:"files"`
	MB     float64           `json:"workspace_mb"`
	Turns  int               `json:"turns_each"`
	// FirstTurnMs is the large session's first turn: its cold capture.
	FirstTurnMs float64 `json:"large_first_turn_ms"`
	Empty       Summary `json:"empty_workspace_turn"`
	Large       Summary `json:"large_workspace_turn"`
	// AddedMs is the difference of the medians; NoiseMs the empty turns'
	// spread between their 10th and 90th percentiles.
	AddedMs float64 `json:"added_ms"`
	NoiseMs float64 `json:"empty_turn_p10_p90_spread_ms"`
	Errors  int     `json:"errors"`
}

// holder measures HolderResult with workspaces under dir (the worker's).
func holder(ctx context.Context, tn tenant, engine events.EngineType, workspaces string, files, turns int, progress io.Writer) (HolderResult, error) {
	res := HolderResult{Engine: engine, Files: files, Turns: turns}
	if engine == "" {
		res.Engine = events.EngineScripted
	}
	me, err := tn.c.Me(ctx)
	if err != nil {
		return res, err
	}
	newSession := func() (string, error) {
		req := api.CreateSession{Model: "scripted/hello"}
		if engine != "" {
			req = api.CreateSession{Engine: engine}
		}
		s, err := tn.c.CreateSession(ctx, tn.project, req)
		return s.ID, err
	}
	empty, err := newSession()
	if err != nil {
		return res, err
	}
	large, err := newSession()
	if err != nil {
		return res, err
	}
	// The session's first turn finds these files in its workspace and
	// captures them; every later turn runs on the worker holding them.
	ws := filepath.Join(workspaces, me.Tenant.ID, tn.project, "sessions", large)
	bytes, err := fillWorkspace(ws, files)
	if err != nil {
		return res, err
	}
	res.MB = float64(bytes) / 1e6
	conns := map[string]*client.Conn{}
	for _, s := range []string{empty, large} {
		cn, err := tn.c.Dial(ctx)
		if err != nil {
			return res, err
		}
		defer cn.Close()
		if _, err := cn.Join(ctx, s, nil); err != nil {
			return res, err
		}
		conns[s] = cn
	}
	turn := func(session string) (time.Duration, error) {
		cn := conns[session]
		t0 := time.Now()
		r, err := cn.Send(ctx, session, api.SendMessage{Text: "hello"})
		if err != nil {
			return 0, err
		}
		if !waitForWithin(cn, r.RunID, 2*time.Minute, func(ev events.ChatEvent) bool { _, ok := ev.Data.(events.ChatComplete); return ok }) {
			return 0, fmt.Errorf("turn %s did not complete", r.RunID)
		}
		return time.Since(t0), nil
	}
	if _, err := turn(empty); err != nil {
		return res, err
	}
	first, err := turn(large)
	if err != nil {
		return res, err
	}
	res.FirstTurnMs = ms(first)
	var e, l Latencies
	stop := startProgress(progress, "holder", func() string { return fmt.Sprintf("%d/%d turns", len(e.d)+len(l.d), 2*turns) })
	defer stop()
	for range turns {
		for _, c := range []struct {
			session string
			into    *Latencies
		}{{empty, &e}, {large, &l}} {
			d, err := turn(c.session)
			if err != nil {
				res.Errors++
				continue
			}
			c.into.Add(d)
		}
	}
	res.Empty, res.Large = e.Summary(), l.Summary()
	res.AddedMs = res.Large.P50 - res.Empty.P50
	res.NoiseMs = e.quantile(0.9) - e.quantile(0.1)
	return res, nil
}

// quantile returns the q-quantile of the samples in milliseconds.
func (l *Latencies) quantile(q float64) float64 {
	l.Summary() // sorts
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return 0
	}
	return ms(l.d[min(int(q*float64(len(l.d))), len(l.d)-1)])
}

// fillWorkspace writes n files under dir as a repository might hold them
// (mostly small text files, one in every 2,000 of 10 MB), dated an hour
// back as files between turns are; it returns the bytes written.
func fillWorkspace(dir string, n int) (int64, error) {
	src := rand.NewChaCha8([32]byte{7})
	rng := rand.New(src)
	past := time.Now().Add(-time.Hour)
	var total int64
	for i := range n {
		size := 1 + rng.IntN(10_000)
		if i%2000 == 0 {
			size = 10 << 20
		}
		data := make([]byte, size)
		_, _ = src.Read(data)
		for j := range data {
			data[j] = 'a' + data[j]%26
		}
		p := filepath.Join(dir, fmt.Sprintf("d%02d/s%02d/f%05d.txt", i%50, i%7, i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return total, err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return total, err
		}
		if err := os.Chtimes(p, past, past); err != nil {
			return total, err
		}
		total += int64(size)
	}
	return total, nil
}

func (h *HolderResult) write(w io.Writer) {
	fmt.Fprintf(w, "\nturn on the worker holding the snapshot: %d %s turns each, one at a time\n", h.Turns, h.Engine)
	fmt.Fprintf(w, "  empty workspace:             p50 %.1f ms p90 %.1f ms (p10–p90 spread %.1f ms)\n", h.Empty.P50, h.Empty.P90, h.NoiseMs)
	fmt.Fprintf(w, "  %d files, %.0f MB:        p50 %.1f ms p90 %.1f ms (first turn, cold capture: %.0f ms)\n",
		h.Files, h.MB, h.Large.P50, h.Large.P90, h.FirstTurnMs)
	fmt.Fprintf(w, "  added by the workspace: %.1f ms at the median; %d errors\n", h.AddedMs, h.Errors)
}
