package auth

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"clopen.dev/pkg/platform/logging"
	"clopen.dev/services/gateway/internal/apierr"
	"clopen.dev/services/gateway/internal/identity"
)

func TestBearerToken(t *testing.T) {
	tests := []struct {
		header, url string
		allowQuery  bool
		want        string
	}{
		{"Bearer clp_x", "/", false, "clp_x"},
		{"bearer  clp_x ", "/", false, "clp_x"},
		{"Basic abc", "/?access_token=clp_q", true, ""},
		{"", "/?access_token=clp_q", true, "clp_q"},
		{"", "/?access_token=clp_q", false, ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", tt.url, nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		if got := BearerToken(r, tt.allowQuery); got != tt.want {
			t.Errorf("BearerToken(%q, %q, %v) = %q, want %q", tt.header, tt.url, tt.allowQuery, got, tt.want)
		}
	}
}

// countingStore counts touches of one well-known key.
type countingStore struct{ touches int }

func (s *countingStore) LookupKey(context.Context, string) (identity.Principal, identity.KeyStatus, error) {
	return identity.Principal{TenantID: "t", KeyID: "k"}, identity.KeyStatus{}, nil
}

func (s *countingStore) TouchKey(context.Context, string, string) error {
	s.touches++
	return nil
}

func TestTouchAtMostOncePerMinute(t *testing.T) {
	st := &countingStore{}
	a := New(st, DefaultConfig(), logging.Discard())
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	key, _, _ := identity.MintKey()
	for _, step := range []time.Duration{0, time.Second, 30 * time.Second, 31 * time.Second, time.Second} {
		now = now.Add(step)
		if _, err := a.Authenticate(context.Background(), key); err != nil {
			t.Fatal(err)
		}
	}
	if st.touches != 2 {
		t.Errorf("touched %d times over 63 s, want 2", st.touches)
	}
}

func TestAllowRefillsAndForgetsIdleKeys(t *testing.T) {
	a := New(&countingStore{}, Config{Rate: 1, Burst: 2}, logging.Discard())
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }
	for range 2 {
		if err := a.Allow("k"); err != nil {
			t.Fatal(err)
		}
	}
	var rl *apierr.RateLimitedError
	if err := a.Allow("k"); !errors.As(err, &rl) || rl.RetryAfter <= 0 || rl.RetryAfter > time.Second {
		t.Fatalf("third request = %v, want rate limited for at most 1s", err)
	}
	now = now.Add(time.Second)
	if err := a.Allow("k"); err != nil {
		t.Errorf("after a second: %v", err)
	}
	now = now.Add(idleAfter + 2*time.Minute)
	_ = a.Allow("other")
	if _, ok := a.keys["k"]; ok {
		t.Error("an idle key's state was kept")
	}
}
