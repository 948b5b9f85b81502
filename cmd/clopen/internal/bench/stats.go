// Package bench measures Clopen under load: the whole pipeline through real
// services and WebSocket clients, and, in the same invocation, the raw
// JetStream and Postgres operations it is built from, so every figure is
// also a ratio to what the infrastructure alone can do on this machine.
package bench

import (
	"math"
	"sort"
	"sync"
	"time"
)

// Latencies collects durations; safe for concurrent use.
type Latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

// Add records one sample.
func (l *Latencies) Add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

// Summary is the distribution of a set of durations, in milliseconds.
type Summary struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

// Summary sorts the samples and returns their percentiles.
func (l *Latencies) Summary() Summary {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return Summary{}
	}
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	at := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(l.d)))) - 1
		return ms(l.d[max(0, min(i, len(l.d)-1))])
	}
	return Summary{N: len(l.d), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(l.d[len(l.d)-1])}
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// Ratio divides a by b, 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*1000) / 1000
}
