package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// TelemetryResult is the streaming cases with traces off and on: what
// exporting a span per request, bus call, query, run and tool costs on the
// event path. Metrics are on in both (the bench reads them).
type TelemetryResult struct {
	Off []StreamResult `json:"traces_off"`
	On  []StreamResult `json:"traces_on"`
	// Exports and ExportedBytes are the OTLP requests the services sent
	// to the sink with traces on, and their bytes.
	Exports       int64 `json:"otlp_exports"`
	ExportedBytes int64 `json:"otlp_bytes"`
}

func (t *TelemetryResult) write(w io.Writer) {
	fmt.Fprintf(w, "\ntraces off → on (OTLP export from every service; %d exports, %.1f MB)\n", t.Exports, float64(t.ExportedBytes)/1e6)
	fmt.Fprintf(w, "  %5s %8s %12s %12s %7s %12s %12s %7s %14s\n", "runs", "target/s", "events/s off", "events/s on", "×",
		"p99 ms off", "p99 ms on", "×", "CPU s off/on")
	for i := range min(len(t.Off), len(t.On)) {
		off, on := t.Off[i], t.On[i]
		fmt.Fprintf(w, "  %5d %8.0f %12.0f %12.0f %7.3f %12.2f %12.2f %7.3f %6.1f / %-6.1f\n", off.Runs, off.TargetRate,
			off.EventsPerSec, on.EventsPerSec, Ratio(on.EventsPerSec, off.EventsPerSec),
			off.SteadyLatency.P99, on.SteadyLatency.P99, Ratio(on.SteadyLatency.P99, off.SteadyLatency.P99),
			cpuSeconds(off.CPU), cpuSeconds(on.CPU))
	}
}

// otlpSink is an OTLP/HTTP endpoint that accepts every export and counts
// it: the services pay the whole cost of making and sending spans, and
// nothing is stored.
type otlpSink struct {
	url            string
	srv            *http.Server
	exports, bytes atomic.Int64
}

func startOTLPSink() (*otlpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &otlpSink{url: "http://" + ln.Addr().String()}
	s.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		s.exports.Add(1)
		s.bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
	})}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *otlpSink) close() (exports, bytes int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	return s.exports.Load(), s.bytes.Load()
}

// cpuSeconds is the CPU the services used over a case.
func cpuSeconds(u Usage) float64 {
	total := 0.0
	for _, c := range u {
		total += c.CPUSeconds
	}
	return total
}

// tracesOffAndOn runs o.Cases on a system with traces off, then on one
// whose every service exports them to a counting sink.
func tracesOffAndOn(ctx context.Context, o Options, db *pgxpool.Pool,
	start func(name string, all []string, env ...string) (*System, tenant, error), say func(string, ...any)) (*TelemetryResult, error) {
	t := &TelemetryResult{}
	for _, traced := range []bool{false, true} {
		name, results, all := "traces-off", &t.Off, []string(nil)
		var sink *otlpSink
		if traced {
			var err error
			if sink, err = startOTLPSink(); err != nil {
				return nil, err
			}
			name, results, all = "traces-on", &t.On, []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + sink.url}
		}
		err := func() error {
			sys, tn, err := start(name, all, "CLOPEN_COALESCE=0")
			if err != nil {
				return err
			}
			defer sys.Stop() // flushes the services' spans
			for _, c := range o.Cases {
				say("stream (%s): %d runs × %d deltas at %.0f deltas/s", name, c.Runs, c.Deltas, c.Rate)
				r, err := stream(ctx, sys, db, tn, c.Runs, c.Deltas, max(c.Clients, 1), c.Rate, o.Progress)
				if err != nil {
					return err
				}
				*results = append(*results, r)
			}
			return nil
		}()
		if sink != nil {
			t.Exports, t.ExportedBytes = sink.close() // after the system stopped
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}
