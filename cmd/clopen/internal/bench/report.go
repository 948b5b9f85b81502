package bench

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// WriteTable prints the report as plain-text tables, with every throughput
// also given as a ratio to the raw baseline measured in the same run.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "\nClopen benchmark, %s, %d CPUs, %s\n", r.At.Format("2006-01-02 15:04 UTC"), r.CPUs, r.Go)
	var jsRate, pgRate float64
	if b := r.Baseline; b != nil {
		jsRate, pgRate = b.JetStreamMsgsPerSec, b.PostgresRowsPerSec
		fmt.Fprintf(w, "\nbaseline (same machine, same run)\n")
		fmt.Fprintf(w, "  raw JetStream async publish → pull consume + ack, 200 B: %.0f msg/s; at 10k msg/s p50 %.2f ms p99 %.2f ms\n",
			b.JetStreamMsgsPerSec, b.JetStreamLatency.P50, b.JetStreamLatency.P99)
		fmt.Fprintf(w, "  raw Postgres unnest(1000) ON CONFLICT DO NOTHING: %.0f rows/s; batch p50 %.1f ms p99 %.1f ms\n",
			b.PostgresRowsPerSec, b.PostgresBatch.P50, b.PostgresBatch.P99)
	}
	streams := func(title string, rs []StreamResult) {
		if len(rs) == 0 {
			return
		}
		fmt.Fprintf(w, "\n%s\n", title)
		fmt.Fprintf(w, "  %5s %7s %8s %8s %10s %9s %7s %7s %7s %8s %10s %6s %5s\n", "runs", "clients", "target/s",
			"events/s", "deltas/s", "×JS base", "p50 ms", "p90 ms", "p99 ms", "max ms", "commit99", "×PG", "errs")
		for _, s := range rs {
			lag := fmt.Sprintf("%.0fms", s.CommitLagP99Ms)
			if s.CommitLagP99Over {
				lag = ">" + lag
			}
			fmt.Fprintf(w, "  %5d %7d %8.0f %8.0f %10.0f %9.3f %7.2f %7.2f %7.2f %8.1f %10s %6.3f %5d\n", s.Runs, s.Clients,
				s.TargetRate, s.EventsPerSec, s.DeltasPerSec, Ratio(s.EventsPerSec, jsRate), s.ClientLatency.P50,
				s.ClientLatency.P90, s.ClientLatency.P99, s.ClientLatency.Max, lag, Ratio(s.EventsPerSec, pgRate), s.Errors)
		}
		for _, s := range rs {
			if s.Resumes > 0 {
				fmt.Fprintf(w, "  %d runs %.0f/s: %d client(s) were disconnected by the gateway and resumed at their cursor\n",
					s.Runs, s.TargetRate, s.Resumes)
			}
		}
		fmt.Fprintf(w, "  client latency after the first %v (every run started): p50 / p90 / p99 / max ms\n", Warmup)
		for _, s := range rs {
			l := s.SteadyLatency
			fmt.Fprintf(w, "    %4d runs %6.0f/s %d client(s): %.2f / %.2f / %.2f / %.1f (n=%d)\n", s.Runs, s.TargetRate, s.Clients,
				l.P50, l.P90, l.P99, l.Max, l.N)
		}
		fmt.Fprintf(w, "  CPU seconds per component over each case (of %d available per second):\n", r.CPUs)
		for _, s := range rs {
			fmt.Fprintf(w, "    %4d runs %6.0f/s: %s\n", s.Runs, s.TargetRate, cpuLine(s.CPU, s.Seconds))
		}
	}
	streams("streaming, no coalescing (one engine event per delta)", r.Streams)
	streams("streaming with delta coalescing", r.Coalesced)
	if c := r.Cancel; c != nil {
		fmt.Fprintf(w, "\ncancel → terminal event at the client, %d runs: p50 %.1f ms p90 %.1f ms p99 %.1f ms max %.1f ms, %d errors\n",
			c.Runs, c.Latency.P50, c.Latency.P90, c.Latency.P99, c.Latency.Max, c.Errors)
		fmt.Fprintf(w, "  of which: cancel replied p50 %.1f ms p99 %.1f ms; terminal event emitted by the worker p50 %.1f ms p99 %.1f ms\n",
			c.Reply.P50, c.Reply.P99, c.Emitted.P50, c.Emitted.P99)
	}
	if i := r.Idle; i != nil {
		fmt.Fprintf(w, "\nidle runs on one worker: %d parked of %d, %d completed after answers, %d errors\n", i.Parked, i.Runs, i.Completed, i.Errors)
		fmt.Fprintf(w, "  worker heap per idle run %.1f KB, RSS per idle run %.1f KB\n", i.HeapPerRunBytes/1024, i.RSSPerRunBytes/1024)
	}
	if t := r.Telemetry; t != nil {
		t.write(w)
	}
	if h := r.Holder; h != nil {
		h.write(w)
	}
	if s := r.Slow; s != nil {
		fmt.Fprintf(w, "\nslow WebSocket client: disconnected %v (bye %q at cursor %d), gateway RSS grew %.1f MB while %d frames were published\n",
			s.Disconnected, s.Reason, s.ByeCursor, s.GatewayRSSGrowthMB, s.FramesSent)
	}
}

func cpuLine(u Usage, secs float64) string {
	names := make([]string, 0, len(u))
	for n := range u {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	total := 0.0
	for _, n := range names {
		pct := u[n].CPUSeconds / secs * 100
		total += pct
		parts = append(parts, fmt.Sprintf("%s %.0f%%", n, pct))
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (total %.0f%% of one core)", total)
}
