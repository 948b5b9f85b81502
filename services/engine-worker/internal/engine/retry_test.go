package engine

import "testing"

func TestRetryStatus(t *testing.T) {
	for _, c := range []struct {
		line   string
		status int
		ok     bool
	}{
		{"2026-01-01T00:00:00.000Z [WARN] [RETRY] Attempt 1 failed with status 429. Retrying after explicit delay of 1000ms...", 429, true},
		{"2026-01-01T00:00:00.000Z [ERROR] [RETRY] Attempt 3 failed with status 500. Retrying with backoff... Error: 500", 500, true},
		{"HTTP 503 Service Unavailable, retrying in 2s", 503, true},
		{"status code: 502; will retry", 502, true},
		{"Attempt 1 failed with status 429.", 0, false},               // no retry
		{"retrying after 429 ms", 0, false},                           // a number, not a status
		{"Retrying with status 200", 0, false},                        // not a failure
		{"[RETRY] Attempt 2 failed. Retrying with backoff", 0, false}, // no status
	} {
		status, ok := RetryStatus(c.line)
		if status != c.status || ok != c.ok {
			t.Errorf("RetryStatus(%q) = %d, %v; want %d, %v", c.line, status, ok, c.status, c.ok)
		}
	}
}

func FuzzRetryStatus(f *testing.F) {
	for _, s := range []string{
		"Attempt 1 failed with status 429. Retrying after explicit delay of 1000ms...",
		"HTTP 503 Service Unavailable, retrying in 2s",
		"status code: 502; will retry",
		"retry", "", "status 4299 retry", "RETRY http/1.1 500",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		status, ok := RetryStatus(line)
		if ok != (status != 0) || ok && (status < 400 || status > 599) {
			t.Fatalf("RetryStatus(%q) = %d, %v", line, status, ok)
		}
		if ok && RetryKind(status) == "" {
			t.Fatalf("no kind for %d", status)
		}
	})
}
