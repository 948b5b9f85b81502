package fakellm_test

import (
	"strings"
	"testing"
	"time"

	"clopen.dev/services/engine-worker/fakellm"
)

// @@SLOW@@ stalls for Config.SlowFor, sending each format's keep-alive.
func TestSlowKeepAlives(t *testing.T) {
	tests := []struct {
		format    string
		keepAlive string
		wantMin   int
	}{
		{"anthropic", "event: ping\n", 4}, // one after message_start, the rest during the stall
		{"chat", ": keep-alive\n", 3},
		{"responses", ": keep-alive\n", 3},
		{"gemini", ":", 0}, // Gemini SDKs accept no keep-alive line, so none is sent
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			rq := streamRequests[0]
			for _, r := range streamRequests {
				if r.format == tt.format {
					rq = r
				}
			}
			f := newFixture(t, fakellm.Config{SlowFor: 300 * time.Millisecond, KeepAlive: 50 * time.Millisecond})
			start := time.Now()
			_, body := post(t, f, rq.path, strings.Replace(strings.Replace(rq.body, "%q", `"@@SLOW@@"`, 1), "%s", "", 1))
			if took := time.Since(start); took < 300*time.Millisecond {
				t.Errorf("slow stream took %v, want at least the 300 ms stall", took)
			}
			got := 0
			for line := range strings.Lines(body) {
				if strings.HasPrefix(line, tt.keepAlive) {
					got++
				}
			}
			if tt.wantMin == 0 && got != 0 || got < tt.wantMin {
				t.Errorf("%d keep-alive lines %q, want at least %d (exactly 0 for gemini)", got, tt.keepAlive, tt.wantMin)
			}
		})
	}
}
