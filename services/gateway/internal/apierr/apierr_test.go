package apierr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"clopen.dev/pkg/events"
)

func TestStatusFor(t *testing.T) {
	tests := []struct {
		name       string
		give       error
		wantStatus int
		wantCode   string
		wantMsg    string
		wantOK     bool
	}{
		{"classified", New(ErrNotFound, "project %s not found", "p1"), 404, "not_found", "project p1 not found", true},
		{"wrapped classified", fmt.Errorf("load: %w", New(ErrConflict, "taken")), 409, "conflict", "taken", true},
		{"bare sentinel", ErrForbidden, 403, "forbidden", "forbidden", true},
		{"service error passes through", &events.APIError{Status: 503, Code: "unavailable", Message: "no streammgr"}, 503, "unavailable", "no streammgr", true},
		{"rate limited", &RateLimitedError{RetryAfter: time.Second}, 429, "rate_limited", "rate limit exceeded", true},
		{"body too large", &http.MaxBytesError{Limit: 10}, 413, "too_large", "10 bytes", true},
		{"deadline", context.DeadlineExceeded, 504, "timeout", "too long", true},
		{"unclassified hides its detail", errors.New("pq: password for admin is hunter2"), 500, "internal", "internal error", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := StatusFor(tt.give)
			if got.Status != tt.wantStatus || got.Code != tt.wantCode || !strings.Contains(got.Message, tt.wantMsg) || ok != tt.wantOK {
				t.Errorf("StatusFor(%v) = %+v, %v; want %d %s %q, %v", tt.give, got, ok, tt.wantStatus, tt.wantCode, tt.wantMsg, tt.wantOK)
			}
		})
	}
}
